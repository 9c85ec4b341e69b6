// The host endpoint: one thread that accepts simulated VMs on the hand-over
// socket and real VMs' QEMUs on their ivshmem sockets, reads every channel's
// requests (polling while busy, sleeping on the doorbells when idle), and
// notices clients that go away.
//
// A simulated VM's channel has one client (0) and the whole data area. A real
// VM's channel (ivshmem) carries all the VM's processes, each with its client
// id and slot of the data area (protocol/vm_region.h).
//
// The tenant of a request is its channel: the loop passes the channel id with
// every message and nothing in a message can change it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "vgpu/protocol/status.h"
#include "vgpu/result.h"
#include "vgpu/thread_annotations.h"
#include "vgpu/transport/host_channel.h"
#include "vgpu/transport/region.h"

namespace vgpu::transport {

struct PeerCredentials {
  int pid = -1;
  unsigned uid = ~0u;
  unsigned gid = ~0u;
  // A real VM (its QEMU, or its ivshmem-plain region), not a simulated VM: it
  // cannot be told why it was refused, and cannot ask again but by rebooting.
  bool real_vm = false;
};

// What the loop reports to its owner (the daemon). Called on the loop thread.
// Requests read from one channel before the loop turns to the next: keeps
// channels fair, and is the unit in which queued work is handed on.
inline constexpr int kRequestsPerBurst = 64;

class ChannelEvents {
 public:
  virtual ~ChannelEvents() = default;
  // A VM named `vm` asks for a channel (a simulated VM, or a real VM's QEMU
  // or guest kernel attaching: peer.real_vm). A non-success status refuses
  // it, with `why` sent back to a simulated VM's client. `data_area` is the host's mapping
  // of the channel's data area, valid while a copy of the `mapping` that
  // on_close is given lives.
  virtual Status on_open(uint64_t channel, const std::string& vm, const PeerCredentials& peer,
                         std::span<uint8_t> data_area, std::string* why) = 0;
  // One request, copied out of shared memory.
  virtual void on_request(uint64_t channel, std::span<const uint8_t> message) = 0;
  // False while the channel's tenant may not queue more (back-pressure): its
  // requests stay in its ring until wake() is called. Asked before each burst
  // of up to kRequestsPerBurst requests, so a tenant may go over its bound by
  // less than one burst.
  virtual bool accepting(uint64_t channel) = 0;
  // The end of a burst of on_request calls for one channel: work the requests
  // queued may be handed on now, all at once.
  virtual void on_burst_end(uint64_t channel) { (void)channel; }
  // The end of a pass over all channels in which at least one burst was read.
  virtual void on_pass_end() {}
  // The loop was woken by wake(): work another thread finished may have
  // something for the loop thread to do (answers, channels to read again).
  virtual void on_wake() {}
  // The client went away or broke the protocol: everything it held is to be
  // released. The region stays mapped while a copy of `mapping` lives: work
  // of the channel still running may need one.
  virtual void on_close(uint64_t channel, std::shared_ptr<const void> mapping) = 0;
};

// What the owner of ChannelEvents may ask of the loop that feeds it: the
// session layer answers through this, so it runs over a fake loop in tests.
class LoopPort {
 public:
  virtual ~LoopPort() = default;
  // Any thread: sends a reply on `channel` (dropped if the channel is gone).
  virtual void reply(uint64_t channel, std::span<const std::span<const uint8_t>> parts) = 0;
  // Any thread: the loop thread calls ChannelEvents::on_wake soon after.
  virtual void wake() = 0;
  // Loop thread (from ChannelEvents::on_request): the part of `channel`'s data
  // area that `client` may name. False for a client the channel cannot have.
  virtual bool client_data_area(uint64_t channel, uint32_t client,
                                std::span<uint8_t>* area) const = 0;
  // Loop thread: the file behind that part of the data area (the region's,
  // which the loop keeps open while the channel lives) and where the part
  // starts in it. False where there is none.
  virtual bool client_data_file(uint64_t channel, uint32_t client, int* fd,
                                uint64_t* offset) const {
    (void)channel;
    (void)client;
    (void)fd;
    (void)offset;
    return false;
  }
};

// How a real VM reaches its region (docs/kernel-module.md).
enum class VmMode {
  kDoorbell,  // ivshmem-doorbell: vgpud serves the ivshmem protocol at `path`;
              // interrupts both ways; QEMU hanging up means the VM is gone
  kPlain,     // ivshmem-plain: the region is the file at `path`; both sides poll
};

struct VmSpec {
  std::string name;  // the VM, as the policy store knows it: [A-Za-z0-9._-]{1,63}
  VmMode mode = VmMode::kDoorbell;
  std::string path;  // the socket QEMU connects to, or the region file it maps
  uint64_t region_size = 128ull << 20;  // a power of two (a PCI BAR)
};

struct HostLoopStats {
  uint64_t channels_opened = 0;
  uint64_t channels_closed = 0;
  uint64_t requests = 0;
  uint64_t corrupt_rings = 0;     // channels closed for broken ring rules (either ring)
  uint64_t stalled_channels = 0;  // channels closed: replies piled up past the outbox bound
  uint64_t reply_stalls = 0;      // times a guest's unread replies paused its requests
  uint64_t sleeps = 0;
};

class HostLoop final : public LoopPort {
 public:
  HostLoop(std::string socket_path, RegionGeometry geometry, ChannelEvents* events);
  ~HostLoop() override;

  // Binds the socket and starts the thread: invalid argument for a bad geometry,
  // unavailable when the socket or the event loop cannot be had.
  Result start();
  void stop();  // closes every channel (on_close each) and joins

  // LoopPort
  void reply(uint64_t channel, std::span<const std::span<const uint8_t>> parts) override
      EXCLUDES(mu_);
  void wake() override;  // e.g. a tenant's queue has room again

  // Any thread, before or after start(): serves real VM `vm.name` at
  // `vm.path`. The socket (or region file) exists when this returns, so QEMU
  // may start right after. Invalid argument for a bad spec, already exists for a
  // name already served, unavailable when the socket or file cannot be made.
  Result add_vm(const VmSpec& vm) EXCLUDES(vm_mu_);
  // Any thread: whether real VM `name` is served (added and not removed).
  bool serves(const std::string& name) EXCLUDES(vm_mu_);
  // Any thread: stops serving real VM `name`. Its socket (or region file) is
  // gone when this returns, so the name may be added again at once; a QEMU
  // still connected keeps its channel until it hangs up.
  void remove_vm(const std::string& name) EXCLUDES(vm_mu_);
  // Any thread: closes real VM `name`'s channel if one is open (and, with
  // `pid` >= 0, only if that QEMU process holds it): on_close releases
  // everything the VM held. The socket stays for the VM's next QEMU. The loop
  // does it soon after this returns.
  void disconnect_vm(const std::string& name, int pid = -1) EXCLUDES(vm_mu_);
  // Any thread: the next QEMU to connect for real VM `name` has had the VM's
  // device unplugged and is plugging a new one (IvshmemSetup::replug).
  void expect_replug(const std::string& name) EXCLUDES(vm_mu_);
  // Any thread but the loop's: returns once the loop has carried out every
  // add_vm, remove_vm and disconnect_vm made before the call (their
  // on_close calls included), so a caller can tell "not done yet" from "done,
  // and nothing happened". At once if the loop is not running.
  void wait_vm_requests() EXCLUDES(vm_mu_);

  bool client_data_area(uint64_t channel, uint32_t client,
                        std::span<uint8_t>* area) const override;
  bool client_data_file(uint64_t channel, uint32_t client, int* fd,
                        uint64_t* offset) const override;

  HostLoopStats stats() const;
  size_t channel_count() const EXCLUDES(mu_);

 private:
  struct Peer;
  void run();
  void accept_clients();
  void handle_hello(int sock);
  void close_channel(uint64_t id);
  Peer* loop_peer(uint64_t channel) const;  // loop thread: by id, or null
  // One pass over all channels, begun at `started`; true if any work was done.
  bool serve_channels(std::chrono::steady_clock::time_point started);
  void sleep_until_event();
  void handle_events(int timeout_us);
  // Real VMs (host_loop_vm.cpp), loop thread.
  struct VmServer;
  void apply_pending_vms() EXCLUDES(vm_mu_);
  void accept_vm(int listen_fd) EXCLUDES(vm_mu_);
  bool open_vm_channel(const std::shared_ptr<Peer>& peer, uint64_t* id);
  bool kernel_attached(uint64_t id, const std::shared_ptr<Peer>& peer,
                       std::span<const uint8_t> message);
  void close_vm_servers() EXCLUDES(vm_mu_);

  const std::string socket_path_;
  const RegionGeometry geometry_;
  ChannelEvents* const events_;

  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  Doorbell wake_;
  std::atomic<bool> running_{false};
  std::thread thread_;
  std::atomic<std::thread::id> loop_id_{};  // thread_'s, once it runs
  std::vector<uint8_t> request_;            // loop thread: the request being read
  // Loop thread: the channel whose burst is being read. Its requests' answers
  // and data areas name it, so finding it costs no hash lookup.
  struct Serving {
    uint64_t id = 0;  // channel ids start at 1
    Peer* peer = nullptr;
  } serving_;

  using Channels = std::unordered_map<uint64_t, std::shared_ptr<Peer>>;
  // Written by the loop thread only, with mu_ held exclusively; other threads
  // read it with mu_ held shared.
  mutable SharedMutex mu_;
  Channels channels_ GUARDED_BY(mu_);
  // The loop thread, as the only writer, reads channels_ without the lock
  // (and so does stop(), once the loop thread has ended).
  const Channels& loop_channels() const NO_THREAD_SAFETY_ANALYSIS { return channels_; }
  std::unordered_map<int, uint64_t> by_socket_;  // loop thread only
  std::unordered_map<int, PeerCredentials> pending_hello_;  // loop thread only
  uint64_t next_channel_ = 1;

  Mutex vm_mu_;
  // VMs whose next QEMU connection is a replug.
  std::unordered_set<std::string> replugging_ GUARDED_BY(vm_mu_);
  // Every VM served: its path.
  std::unordered_map<std::string, std::string> vm_names_ GUARDED_BY(vm_mu_);
  std::vector<std::shared_ptr<VmServer>> pending_vms_ GUARDED_BY(vm_mu_);  // added, not yet served
  struct VmOp {
    std::string name;
    bool remove = false;  // remove_vm; else disconnect_vm
    int pid = -1;
  };
  std::vector<VmOp> vm_ops_ GUARDED_BY(vm_mu_);  // for the loop, before pending_vms_
  uint64_t vm_requests_ GUARDED_BY(vm_mu_) = 0;  // add/remove/disconnect calls queued
  uint64_t vm_requests_done_ GUARDED_BY(vm_mu_) = 0;  // of those, carried out by the loop
  CondVar vm_requests_cv_;                            // vm_requests_done_ moved
  std::unordered_map<int, std::shared_ptr<VmServer>> vm_servers_;  // by listen fd; loop thread
  std::vector<std::shared_ptr<VmServer>> plain_vms_;  // loop thread
  int plain_channels_ = 0;   // loop thread: while nonzero, idle sleeps are short
  int plain_nap_us_ = 0;     // loop thread: the current one
  // When the loop last read a request that wants an answer (loop thread),
  // and when a reply was last written (any thread; steady_clock ticks):
  // polling lasts longer while an answer is owed.
  std::chrono::steady_clock::time_point last_read_{};
  std::atomic<int64_t> last_reply_ns_{0};

  std::atomic<uint64_t> opened_{0}, closed_{0}, requests_{0}, corrupt_{0}, sleeps_{0};
  std::atomic<uint64_t> stalled_{0}, reply_stalls_{0};
};

}  // namespace vgpu::transport
