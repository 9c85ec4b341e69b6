#include "domain_watcher.h"

#include <libvirt/virterror.h>
#include <pthread.h>

#include "virt_error.h"
#include "virt_event_loop.h"

namespace vgpu::virt {
namespace {

using Clock = std::chrono::steady_clock;

virConnectPtr default_open(const std::string& uri, std::string* why) {
  virConnectPtr c = virConnectOpen(uri.c_str());
  if (!c) *why = last_error();
  return c;
}

EventKind kind_of(int event) {
  switch (event) {
    case VIR_DOMAIN_EVENT_DEFINED: return EventKind::kDefined;
    case VIR_DOMAIN_EVENT_UNDEFINED: return EventKind::kUndefined;
    case VIR_DOMAIN_EVENT_STARTED: return EventKind::kStarted;
    case VIR_DOMAIN_EVENT_STOPPED: return EventKind::kStopped;
    case VIR_DOMAIN_EVENT_RESUMED: return EventKind::kResumed;
    default: return EventKind::kOther;
  }
}

std::string stop_reason(int detail) {
  switch (detail) {
    case VIR_DOMAIN_EVENT_STOPPED_SHUTDOWN: return "shutdown";
    case VIR_DOMAIN_EVENT_STOPPED_DESTROYED: return "destroyed";
    case VIR_DOMAIN_EVENT_STOPPED_CRASHED: return "crashed";
    case VIR_DOMAIN_EVENT_STOPPED_MIGRATED: return "migrated";
    case VIR_DOMAIN_EVENT_STOPPED_SAVED: return "saved";
    case VIR_DOMAIN_EVENT_STOPPED_FAILED: return "failed";
    case VIR_DOMAIN_EVENT_STOPPED_FROM_SNAPSHOT: return "snapshot";
    default: return "stopped";
  }
}

std::string close_reason(int reason) {
  switch (reason) {
    case VIR_CONNECT_CLOSE_REASON_ERROR: return "connection error";
    case VIR_CONNECT_CLOSE_REASON_EOF: return "libvirtd closed the connection";
    case VIR_CONNECT_CLOSE_REASON_KEEPALIVE: return "libvirtd stopped answering (keepalive)";
    default: return "the connection was closed";
  }
}

}  // namespace

DomainWatcher::DomainWatcher(WatcherOptions options, DomainEvents* events)
    : options_(std::move(options)), events_(events) {}

DomainWatcher::~DomainWatcher() { stop(); }

void DomainWatcher::start() {
  ensure_event_loop();  // before the connection: libvirt delivers its events there
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "vgpu-libvirt");  // for top -H, perf, gdb
    run();
  });
}

void DomainWatcher::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  disconnect();
}

bool DomainWatcher::connected() const {
  std::lock_guard lock(mu_);
  return conn_ != nullptr;
}

int DomainWatcher::attempts() const {
  std::lock_guard lock(mu_);
  return attempts_;
}

int DomainWatcher::connections() const {
  std::lock_guard lock(mu_);
  return connections_;
}

uint64_t DomainWatcher::events_handled() const {
  std::lock_guard lock(mu_);
  return events_handled_;
}

void DomainWatcher::inject_close(const std::string& why) {
  {
    std::lock_guard lock(mu_);
    close_pending_ = true;
    close_why_ = why;
  }
  cv_.notify_all();
}

int DomainWatcher::on_lifecycle(virConnectPtr, virDomainPtr dom, int event, int detail,
                                void* opaque) {
  auto* self = static_cast<DomainWatcher*>(opaque);
  Raw raw;
  raw.event = event;
  raw.detail = detail;
  const char* name = virDomainGetName(dom);
  raw.name = name ? name : "";
  char uuid[VIR_UUID_STRING_BUFLEN] = {};
  if (virDomainGetUUIDString(dom, uuid) == 0) raw.uuid = uuid;
  {
    std::lock_guard lock(self->mu_);
    self->queue_.push_back(std::move(raw));
  }
  self->cv_.notify_all();
  return 0;
}

void DomainWatcher::on_close(virConnectPtr, int reason, void* opaque) {
  static_cast<DomainWatcher*>(opaque)->inject_close(close_reason(reason));
}

bool DomainWatcher::connect() {
  std::string why;
  virConnectPtr c =
      options_.open ? options_.open(options_.uri, &why) : default_open(options_.uri, &why);
  {
    std::lock_guard lock(mu_);
    attempts_++;
  }
  if (!c) {
    last_why_ = why.empty() ? "cannot connect" : why;
    return false;
  }
  auto conn = std::make_unique<Connection>(c);
  // Not every driver has keepalives or close callbacks (the test driver has
  // neither, and needs neither).
  virConnectSetKeepAlive(c, options_.keepalive_interval_s, options_.keepalive_count);
  virConnectRegisterCloseCallback(c, on_close, this, nullptr);
  const int id = virConnectDomainEventRegisterAny(
      c, nullptr, VIR_DOMAIN_EVENT_ID_LIFECYCLE, VIR_DOMAIN_EVENT_CALLBACK(on_lifecycle), this,
      nullptr);
  std::vector<DomainInfo> domains;
  const Result listed = id < 0 ? Result() : conn->list(&domains);
  if (id < 0 || !listed.ok()) {
    last_why_ = id < 0 ? "cannot subscribe to domain events: " + last_error() : listed.text();
    if (id >= 0) virConnectDomainEventDeregisterAny(c, id);
    virConnectUnregisterCloseCallback(c, on_close);
    return false;  // conn closes it
  }
  {
    std::lock_guard lock(mu_);
    conn_ = std::move(conn);
    callback_ = id;
    close_pending_ = false;
  }
  events_->connected(domains);
  std::lock_guard lock(mu_);
  ++connections_;
  return true;
}

void DomainWatcher::disconnect() {
  std::unique_ptr<Connection> conn;
  int id = -1;
  {
    std::lock_guard lock(mu_);
    conn = std::move(conn_);
    id = callback_;
    callback_ = -1;
    queue_.clear();  // events of a connection that is gone; connected() tells the state again
  }
  if (!conn) return;
  if (id >= 0) virConnectDomainEventDeregisterAny(conn->raw(), id);
  virConnectUnregisterCloseCallback(conn->raw(), on_close);
}

void DomainWatcher::handle(const Raw& raw) {
  DomainEvent e;
  e.kind = kind_of(raw.event);
  if (e.kind == EventKind::kOther) return;
  e.uuid = raw.uuid;
  e.name = raw.name;
  if (e.kind == EventKind::kStopped) e.reason = stop_reason(raw.detail);
  Connection* conn = nullptr;
  {
    std::lock_guard lock(mu_);
    conn = conn_.get();  // only this thread replaces it
  }
  Domain d;
  if (conn && conn->find(e.uuid, &d).ok()) e.state_now = d.info().state;
  events_->event(e);
}

void DomainWatcher::run() {
  Backoff backoff(options_.backoff);
  int failures = 0;
  auto next_attempt = Clock::now();
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (!conn_) {
      if (Clock::now() < next_attempt) {
        cv_.wait_until(lock, next_attempt, [this] { return stopping_; });
        continue;
      }
      lock.unlock();
      const bool up = connect();
      if (up) {
        failures = 0;
        backoff.reset();
      } else {
        const auto delay = backoff.next();
        next_attempt = Clock::now() + delay;
        events_->unreachable(last_why_, ++failures, delay);
      }
      lock.lock();
      continue;
    }
    if (close_pending_) {
      const std::string why = close_why_;
      close_pending_ = false;
      lock.unlock();
      disconnect();
      events_->lost(why);
      // libvirtd is restarting, usually: the first attempt comes soon.
      next_attempt = Clock::now() + options_.backoff.initial;
      lock.lock();
      continue;
    }
    if (!queue_.empty()) {
      const Raw raw = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      handle(raw);
      lock.lock();
      ++events_handled_;
      continue;
    }
    cv_.wait(lock, [this] { return stopping_ || close_pending_ || !queue_.empty(); });
  }
}

}  // namespace vgpu::virt
