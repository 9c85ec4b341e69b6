// Watches a libvirt connection's domains: lifecycle events, reported by UUID
// (names can be reused) to a DomainEvents, and the connection itself:
// reconnecting with backoff when libvirtd restarts or cannot be reached, and
// reporting the domains afresh after each (re)connection so the owner can
// reconcile what it missed.
//
// One thread of its own handles everything the owner is told, in order;
// libvirt's event loop thread (event_loop.h) only queues events for it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backoff.h"
#include "virt_connection.h"

namespace vgpu::virt {

enum class EventKind : uint8_t {
  kDefined,    // defined or its definition changed
  kUndefined,  // its definition is gone (a running domain runs on, transient)
  kStarted,    // QEMU runs (it connected to its sockets before this)
  kStopped,    // QEMU is gone: shut down, destroyed, crashed, failed, ...
  kResumed,    // paused, it runs again (the same QEMU)
  kOther,      // suspended, ...: nothing for vgpu
};

struct DomainEvent {
  EventKind kind = EventKind::kOther;
  std::string uuid;
  std::string name;
  // kStopped: shutdown, destroyed, crashed, failed, migrated, saved, snapshot
  // (docs/libvirt.md); kUndefined, kDefined: "".
  std::string reason;
  // The domain's state when the watcher handled the event (kNoState if gone).
  DomainState state_now = DomainState::kNoState;
};

// Called on the watcher's thread, one at a time.
class DomainEvents {
 public:
  virtual ~DomainEvents() = default;
  // Connected (again): every domain as it is now.
  virtual void connected(const std::vector<DomainInfo>& domains) = 0;
  // An attempt to connect failed (`failures` in a row); the next is in `retry_in`.
  virtual void unreachable(const std::string& why, int failures,
                           std::chrono::milliseconds retry_in) = 0;
  // An established connection closed (libvirtd stopped or restarted).
  virtual void lost(const std::string& why) = 0;
  virtual void event(const DomainEvent& e) = 0;
};

struct WatcherOptions {
  std::string uri = "qemu:///system";
  Backoff::Params backoff;
  int keepalive_interval_s = 5;  // a libvirtd that stops answering is dropped
  unsigned keepalive_count = 3;  //   after interval * (count + 1) seconds
  // Opens a connection (the seam tests inject failures through); default virConnectOpen.
  std::function<virConnectPtr(const std::string& uri, std::string* why)> open;
};

class DomainWatcher {
 public:
  DomainWatcher(WatcherOptions options, DomainEvents* events);
  ~DomainWatcher();
  void start();
  void stop();

  bool connected() const;
  int attempts() const;  // connection attempts so far
  // How many times DomainEvents::connected, and how many lifecycle events
  // (those vgpu ignores too), have been handled to the end: what tests wait
  // on to know the watcher is done with something, rather than sleep.
  int connections() const;
  uint64_t events_handled() const;
  // Fault injection (tests): behave as if libvirt closed the connection.
  void inject_close(const std::string& why);

 private:
  struct Raw {
    int event = 0, detail = 0;
    std::string uuid, name;
  };
  void run();
  bool connect();     // watcher thread, mu_ not held
  void disconnect();  // watcher thread, mu_ not held
  void handle(const Raw& raw);
  static int on_lifecycle(virConnectPtr, virDomainPtr dom, int event, int detail, void* opaque);
  static void on_close(virConnectPtr, int reason, void* opaque);

  const WatcherOptions options_;
  DomainEvents* const events_;

  mutable std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  bool stopping_ = false;
  bool close_pending_ = false;
  std::string close_why_;
  std::deque<Raw> queue_;
  int attempts_ = 0;
  int connections_ = 0;
  uint64_t events_handled_ = 0;
  std::unique_ptr<Connection> conn_;  // written by the watcher thread only
  int callback_ = -1;
  std::string last_why_;  // watcher thread: why the last attempt failed
  std::thread thread_;
};

}  // namespace vgpu::virt
