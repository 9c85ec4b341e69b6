// vgpud's composition: the transport loop feeds requests to the call handler,
// queued work goes to the dispatcher, completions go back as replies, and the
// usage the dispatcher measures is flushed to the store.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "call_latency.h"
#include "vgpu/executor/backend.h"
#include "daemon_status.h"
#include "libvirt_control.h"
#include "metrics_server.h"
#include "quota_control.h"
#include "vgpu/executor/call_handler.h"
#include "vgpu/policy/store.h"
#include "vgpu/scheduler/dispatcher.h"
#include "scheduler_control.h"
#include "tenant_task_pool.h"
#include "vgpu/transport/host_loop.h"

namespace vgpu::daemon {

struct DaemonConfig {
  std::string runtime_dir;
  std::string db_path;
  // Policy, slice, overlap depth, VM weights (scheduler_control.h); null: defaults.
  std::shared_ptr<SchedulerControl> scheduling;
  transport::RegionGeometry geometry;
  std::vector<transport::VmSpec> vms;  // real VMs served from the start (vm_sockets.h)
  std::string libvirt_uri;  // whose domains to watch (docs/libvirt.md); "" or "none": none
  int vm_gid = -1;          // group of the VM sockets (QEMU's); -1: the daemon's
  std::string metrics_listen;  // HOST:PORT for Prometheus (metrics_server.h); "": none
  std::chrono::milliseconds flush_interval{1000};
  // Threads answering slow calls (CallHandler::slow), one per VM at a time.
  int call_threads = 2;
};

// Three connections to one database, so that the transport thread (every
// VM's calls, and the heartbeat guest modules watch) never waits for a
// writer: in WAL mode a read never waits, a write waits for any other
// writer, a sqlite3 shell's transaction included.
struct DaemonStores {
  // The transport thread's (VMs opening channels) and the quota accounting's:
  // reads, but for a VM's first connection ever.
  std::unique_ptr<policy::Store> serving;
  // The admin socket's requests (quota_control.h): a usage report may read
  // for seconds.
  std::unique_ptr<policy::Store> admin;
  // The writes that may wait: the usage ledger and when VMs were last seen
  // (the flusher), libvirt domain sessions.
  std::unique_ptr<policy::Store> ledger;
};

class Daemon final : public transport::ChannelEvents, public executor::WorkSink {
 public:
  Daemon(DaemonConfig config, std::unique_ptr<executor::Backend> backend, DaemonStores stores);
  ~Daemon() override;

  Status start(std::string* why);
  void stop();  // closes every channel, flushes usage

  std::string socket_path() const;

  // Any thread, after start(): true once the transport loop has woken and
  // answered within `within` (the service watchdog's probe: a loop stuck in
  // a call answers nothing, so systemd gets no ping).
  bool responsive(std::chrono::milliseconds within);

 private:
  struct Session;
  struct Channel;

  // transport::ChannelEvents (loop thread)
  // Who may connect as a simulated VM (whose budget it spends): root, the
  // daemon's own user, vgpu admins, and the login of the student it is bound
  // to. kNotPermitted, with `why`, for anyone else.
  Status admit_user(const std::string& vm, uint32_t uid, std::string* why);
  Status on_open(uint64_t channel, const std::string& vm, const transport::PeerCredentials& peer,
                 std::span<uint8_t> data_area, std::string* why) override;
  void on_request(uint64_t channel, std::span<const uint8_t> message) override;
  bool accepting(uint64_t channel) override;
  void on_burst_end(uint64_t channel) override;
  void on_pass_end() override;
  void on_wake() override;
  void on_close(uint64_t channel, std::shared_ptr<const void> mapping) override;

  // One request of an admitted or refused channel with no slow call pending.
  void serve(Channel& ch, std::span<const uint8_t> message);
  // The call handler's outcome: counted, answered (Goodbye: once the session is gone).
  void answer(Channel& ch, const proto::ReplyTo& to, const executor::Outcome& out);
  // Slow work of `ch` (a call, or creating a session's context) runs on
  // slow_calls_; `finish` runs on the loop thread afterwards, then the
  // channel's requests held meanwhile are served in order (resume).
  void run_slow(Channel& ch, std::function<std::function<void()>()> work);
  void resume(uint64_t channel);
  void run_finished();  // loop thread, or stop() once the loop has ended
  void close_now(uint64_t channel, std::shared_ptr<const void> mapping);

  // executor::WorkSink (loop thread)
  void submit(executor::TenantId tenant, executor::Work&& work,
              const proto::ReplyTo& reply) override;
  uint64_t gpu_ns(executor::TenantId tenant) override;
  Status budget(executor::TenantId tenant, executor::TenantBudget* out) override;
  Status processes(executor::TenantId tenant, std::vector<executor::TenantProcess>* out) override;

  // dispatcher thread
  void on_complete(const scheduler::Command& command, const executor::ExecResult& result);

  void send_reply(const proto::ReplyTo& to, Status status, std::span<const uint8_t> payload);
  // The channel's tenant joins the dispatcher (its first channel) and counts.
  void admit_channel(Channel& ch, const scheduler::TenantParams& params);
  // A refused real VM's channel: true once a look (at most one per
  // kRefusedLookInterval) finds it admitted.
  bool admitted_now(Channel& ch);
  // A VM's first connection ever: its tenant is a new row, and the write may
  // wait for another program's write lock (up to SQLite's busy timeout). It
  // runs off the loop thread; the channel's requests wait behind it, then
  // the channel is admitted or refused as any other.
  void register_vm(Channel& ch);
  // Admits the channel's tenant, or keeps the channel refused until a look
  // finds it admitted. False (and `why`) when refused.
  bool admit_opened(Channel& ch, std::string* why);
  // A refused channel's request: cudaErrorDevicesUnavailable; a Goodbye is
  // granted.
  void refuse_request(const proto::ReplyTo& to);
  // Hands the work queued during the current burst to the dispatcher.
  void hand_on_burst();
  // The client's context runs nothing more from now on; it is destroyed, and
  // then `then` runs, once a command of it running now has finished (on the
  // dispatcher thread then).
  void end_session(Channel& ch, uint32_t client, std::function<void()> then = {});
  // Writes the usage measured since the last flush (the flusher thread each
  // interval; the admin thread for `usage.flush`; stop()).
  void flush_usage();
  void flusher();

  const DaemonConfig config_;
  const std::unique_ptr<executor::Backend> backend_;
  const std::unique_ptr<policy::Store> store_;        // DaemonStores::serving
  const std::unique_ptr<policy::Store> admin_store_;
  const std::unique_ptr<policy::Store> ledger_store_;
  scheduler::SteadyClock clock_;
  std::unique_ptr<QuotaControl> quotas_;  // the quota gate, admin socket, live changes
  const std::shared_ptr<SchedulerControl> scheduling_;
  std::unique_ptr<scheduler::Dispatcher> dispatcher_;
  std::unique_ptr<transport::HostLoop> loop_;
  std::unique_ptr<LibvirtControl> libvirt_;  // attached domains: sockets, lifecycle, sessions
  std::unique_ptr<MetricsServer> metrics_;   // --metrics-listen
  executor::CallHandler calls_;

  TenantCounters counters_;  // what each VM did wrong (daemon_status.h)
  CallLatency latency_;      // how long each VM's calls took (metrics)
  // Slow calls (CallHandler::slow), off the loop thread: one VM's module
  // load or worker call never holds up the others' calls or the heartbeat.
  TenantTaskPool slow_calls_;
  std::mutex finished_mu_;
  std::vector<std::function<void()>> finished_;  // for the loop thread (guarded by finished_mu_)
  std::atomic<bool> any_finished_{false};
  std::chrono::steady_clock::time_point started_;

  // responsive(): probes asked, and the last one on_wake answered.
  std::atomic<uint64_t> probe_asked_{0};
  std::atomic<uint64_t> probe_answered_{0};
  std::mutex probe_mu_;
  std::condition_variable probe_cv_;

  // Loop thread only.
  std::unordered_map<uint64_t, std::unique_ptr<Channel>> channels_;
  // The loop names one channel for a whole burst (accepting, then each
  // request): the last one found is kept, so a call costs no hash lookup.
  Channel* find_channel(uint64_t id);
  uint64_t found_id_ = 0;  // channel ids start at 1
  Channel* found_ = nullptr;
  std::unordered_map<scheduler::TenantId, int> channels_per_tenant_;
  // Work accepted during the burst being served (one channel's, so one
  // tenant's), handed to the dispatcher together when the burst ends: the
  // loop and dispatcher threads meet once per burst, not once per call.
  std::vector<scheduler::Command> burst_;
  scheduler::TenantId burst_tenant_ = 0;
  bool handed_this_pass_ = false;  // the loop's pass handed work to the dispatcher

  // One flush at a time; guards flushed_.
  std::mutex flushing_;
  // Usage already written to the store, per tenant.
  std::unordered_map<scheduler::TenantId, scheduler::TenantUsage> flushed_;
  std::mutex flush_mu_;
  // VMs that opened a channel since the last flush: the flusher writes their
  // last_seen (under flush_mu_).
  std::unordered_set<std::string> seen_vms_;
  std::condition_variable flush_cv_;
  bool stopping_ = false;
  std::thread flush_thread_;
};

}  // namespace vgpu::daemon
