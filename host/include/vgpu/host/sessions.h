// The host's session layer: what each channel the transport loop opens
// becomes. A channel is admitted as its VM's tenant (or refused, or kept
// waiting until a teacher binds the VM); each guest process on it gets a
// device context; its immediate calls are answered here (slow ones on a
// pool, off the loop thread), its queued work is handed to the dispatcher a
// burst at a time, and completions go back as replies. A channel's close
// ends every session on it once the work it may still have running ends.
//
// Threads: the ChannelEvents and WorkSink calls on the loop thread;
// on_complete on the dispatcher thread; responsive() and the counters from
// any thread. The loop is reached only through transport::LoopPort, so the
// layer runs over a fake loop in tests.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "vgpu/executor/backend.h"
#include "vgpu/executor/call_handler.h"
#include "vgpu/host/call_latency.h"
#include "vgpu/host/quota_control.h"
#include "vgpu/host/tenant_counters.h"
#include "vgpu/host/tenant_task_pool.h"
#include "vgpu/host/usage_flusher.h"
#include "vgpu/policy/store.h"
#include "vgpu/scheduler/dispatcher_group.h"
#include "vgpu/thread_annotations.h"
#include "vgpu/transport/host_loop.h"

namespace vgpu::host {

struct SessionParts {
  executor::Backend* backend = nullptr;
  // The loop thread's reads (a channel's VM and who may use it).
  policy::Store* store = nullptr;
  // A VM's first connection ever writes its tenant here, off the loop thread.
  policy::Store* ledger_store = nullptr;
  QuotaControl* quotas = nullptr;  // admission, budgets
  scheduler::DispatcherGroup* dispatcher = nullptr;
  UsageFlusher* usage = nullptr;  // told which VMs were seen
  int call_threads = 2;           // slow calls, one per VM at a time
  // A VM's channel was admitted (the weights and courses the config file pins
  // on VMs by name). Loop thread. May be empty.
  std::function<void(scheduler::TenantId, const std::string& vm)> vm_opened;
  // Process `pid` asks for a channel as `vm`: false (and why) if `vm` is
  // attached to a libvirt domain and `pid` is a QEMU of another domain
  // (docs/libvirt.md). May be empty.
  std::function<bool(const std::string& vm, int pid, std::string* why)> admit_peer;
};

class Sessions final : public transport::ChannelEvents, public executor::WorkSink {
 public:
  explicit Sessions(SessionParts parts);
  ~Sessions() override;

  // Before the loop starts: where replies go and whom to wake.
  void attach(transport::LoopPort* loop) { loop_ = loop; }
  // After the loop has stopped (every channel closed): slow calls still
  // running end, and the channels they held close.
  void stop();

  // Dispatcher thread: a queued command finished; its reply goes out.
  void on_complete(const scheduler::Command& command, const executor::ExecResult& result);

  // Any thread: true once the loop thread has woken and answered within
  // `within` (the service watchdog's probe).
  bool responsive(std::chrono::milliseconds within) EXCLUDES(probe_mu_);

  const TenantCounters& counters() const { return counters_; }
  const CallLatency& latency() const { return latency_; }

  // transport::ChannelEvents (loop thread)
  Status on_open(uint64_t channel, const std::string& vm, const transport::PeerCredentials& peer,
                 std::span<uint8_t> data_area, std::string* why) override;
  void on_request(uint64_t channel, std::span<const uint8_t> message) override;
  bool accepting(uint64_t channel) override;
  void on_burst_end(uint64_t channel) override;
  void on_pass_end() override;
  void on_wake() override;
  void on_close(uint64_t channel, std::shared_ptr<const void> mapping) override;

  // executor::WorkSink (loop thread)
  void submit(executor::TenantId tenant, executor::Work&& work,
              const proto::ReplyTo& reply) override;
  uint64_t gpu_ns(executor::TenantId tenant) override;
  Status budget(executor::TenantId tenant, executor::TenantBudget* out) override;
  Status processes(executor::TenantId tenant, std::vector<executor::TenantProcess>* out) override;

 private:
  struct Session;
  struct Channel;

  // Who may connect as a simulated VM (whose budget it spends): root, the
  // daemon's own user, vgpu admins, and the login of the student it is bound
  // to. kNotPermitted, with `why`, for anyone else.
  Status admit_user(const std::string& vm, uint32_t uid, std::string* why);
  // One request of an admitted or refused channel with no slow call pending.
  void serve(Channel& ch, std::span<const uint8_t> message);
  // The call handler's outcome: counted, answered (Goodbye: once the session is gone).
  void answer(Channel& ch, const proto::ReplyTo& to, const executor::Outcome& out);
  // Slow work of `ch` (a call, or creating a session's context) runs on
  // slow_calls_; `finish` runs on the loop thread afterwards, then the
  // channel's requests held meanwhile are served in order (resume).
  void run_slow(Channel& ch, std::function<std::function<void()>()> work);
  void resume(uint64_t channel);
  // A copy of the file behind a client's data area (closed with its last
  // holder: a slow job may outlive the channel) and where the area starts
  // in it; no fd where the loop has none. Loop thread.
  struct DataFile {
    std::shared_ptr<const int> fd;
    uint64_t offset = 0;
  };
  DataFile data_file(uint64_t channel, uint32_t client) const;
  // Tells the backend where a new context's data area is. Nothing changes
  // where it has no use for it or cannot register it: copies work either way.
  void attach_data_area(executor::ContextId context, const DataFile& file, std::span<uint8_t> area);
  void run_finished() EXCLUDES(finished_mu_);  // loop thread, or stop() once the loop has ended
  void close_now(uint64_t channel, std::shared_ptr<const void> mapping);
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

  const SessionParts parts_;
  executor::Backend* const backend_;
  scheduler::DispatcherGroup* const dispatcher_;
  QuotaControl* const quotas_;
  transport::LoopPort* loop_ = nullptr;
  executor::CallHandler calls_;

  TenantCounters counters_;  // what each VM did wrong (daemon_status.h)
  CallLatency latency_;      // how long each VM's calls took (metrics)
  // Slow calls (CallHandler::slow), off the loop thread: one VM's module
  // load or worker call never holds up the others' calls or the heartbeat.
  TenantTaskPool slow_calls_;
  Mutex finished_mu_;
  std::vector<std::function<void()>> finished_ GUARDED_BY(finished_mu_);  // for the loop thread
  std::atomic<bool> any_finished_{false};

  // responsive(): probes asked, and the last one on_wake answered.
  std::atomic<uint64_t> probe_asked_{0};
  std::atomic<uint64_t> probe_answered_{0};
  Mutex probe_mu_;  // probe_cv_'s
  CondVar probe_cv_;

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
};

}  // namespace vgpu::host
