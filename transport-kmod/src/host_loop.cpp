#include "vgpu/transport/host_loop.h"

#include <pthread.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "host_loop_internal.h"
#include "loop_polling.h"
#include "vgpu/protocol/handover.h"
#include "vgpu/transport/unix_socket.h"

namespace vgpu::transport {
namespace {

using Clock = std::chrono::steady_clock;
using namespace loop_tags;

constexpr std::chrono::microseconds kEventsEvery{20};  // while busy or polling

void refuse(int sock, Status status, const std::string& why) {
  vgpu_welcome w{};
  w.magic = VGPU_WELCOME_MAGIC;
  w.status = static_cast<int32_t>(status);
  std::strncpy(w.message, why.c_str(), sizeof w.message - 1);
  send_with_fds(sock, {reinterpret_cast<const uint8_t*>(&w), sizeof w}, {});
}

}  // namespace

bool valid_vm_name(const char* name, size_t cap) {
  const size_t len = strnlen(name, cap);
  if (len == 0 || len == cap) return false;
  for (size_t i = 0; i < len; ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

HostLoop::HostLoop(std::string socket_path, RegionGeometry geometry, ChannelEvents* events)
    : socket_path_(std::move(socket_path)), geometry_(geometry), events_(events) {}

HostLoop::~HostLoop() { stop(); }

Result HostLoop::start() {
  if (!geometry_.valid()) return Result::invalid_argument("invalid region geometry");
  std::string why;
  listen_fd_ = listen_unix(socket_path_, &why);
  if (listen_fd_ < 0) return Result::unavailable(why);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_ = Doorbell::create();
  if (epoll_fd_ < 0 || !wake_.valid()) return Result::unavailable("cannot create the event loop");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = tag(kListen, listen_fd_);
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  ev.data.u64 = tag(kWake, wake_.fd());
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_.fd(), &ev);
  running_ = true;
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "vgpu-loop");  // for top -H, perf, gdb
    loop_id_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    run();
  });
  return {};
}

void HostLoop::stop() {
  if (!thread_.joinable()) {
    close_vm_servers();  // VMs added to a loop that never ran
    return;
  }
  running_ = false;
  wake_.ring();
  thread_.join();
  {
    MutexLock lock(vm_mu_);
    vm_requests_cv_.notify_all();  // wait_vm_requests returns: nothing will be carried out now
  }
  std::vector<uint64_t> ids;
  for (const auto& [id, peer] : loop_channels()) ids.push_back(id);
  for (uint64_t id : ids) close_channel(id);
  for (const auto& [sock, creds] : pending_hello_) close(sock);
  pending_hello_.clear();
  close_vm_servers();
  close(listen_fd_);
  unlink(socket_path_.c_str());
  close(epoll_fd_);
  listen_fd_ = epoll_fd_ = -1;
}

void HostLoop::reply(uint64_t channel, std::span<const std::span<const uint8_t>> parts) {
  std::shared_ptr<Peer> held;  // another thread holds the peer while it writes
  Peer* peer = nullptr;
  if (std::this_thread::get_id() == loop_id_.load(std::memory_order_relaxed)) {
    // An inline call's answer: channels_ changes on this thread only, so the
    // peer needs neither the lock nor a reference (the cheapest round trip
    // pays for both otherwise), and it is usually the one being served.
    peer = loop_peer(channel);
    if (!peer) return;
  } else {
    ReaderLock lock(mu_);
    auto it = channels_.find(channel);
    if (it == channels_.end()) return;
    held = it->second;
    peer = held.get();
  }
  peer->channel->write_reply(parts);
  last_reply_ns_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
  if (peer->channel->has_outbox()) wake_.ring();  // the loop flushes it when there is room
}

void HostLoop::wake() { wake_.ring(); }

HostLoopStats HostLoop::stats() const {
  return {opened_.load(), closed_.load(),  requests_.load(),     corrupt_.load(),
          stalled_.load(), reply_stalls_.load(), sleeps_.load()};
}

size_t HostLoop::channel_count() const {
  ReaderLock lock(mu_);
  return channels_.size();
}

void HostLoop::run() {
  apply_pending_vms();
  auto now = Clock::now();  // one clock read per pass: at its end, for the next
  auto last_work = now;
  auto last_events = now;
  while (running_) {
    const bool worked = serve_channels(now);
    now = Clock::now();
    // Sockets and doorbells (new clients, hang-ups) every few microseconds,
    // not on every pass: each look is a system call. The heartbeat goes at
    // the same pace: the guests look at it once a second.
    if (now - last_events >= kEventsEvery) {
      handle_events(0);
      for (const auto& [id, peer] : loop_channels()) peer->channel->beat();
      last_events = now;
    }
    if (worked) {
      last_work = now;
      plain_nap_us_ = 0;
      continue;
    }
    const Clock::time_point replied{Clock::duration(last_reply_ns_.load(std::memory_order_relaxed))};
    if (const auto waited = polled_so_far({last_work, last_read_, replied}, now)) {
      poll_step(*waited);
      continue;
    }
    sleep_until_event();
    now = last_work = Clock::now();
  }
}

bool HostLoop::serve_channels(Clock::time_point started) {
  bool worked = false;
  std::vector<uint64_t> broken;
  std::vector<uint8_t>& msg = request_;  // reused: no allocation per pass
  auto doomed = [&](uint64_t id, const Peer& peer) {
    const HostChannel& ch = *peer.channel;
    if (!ch.broken() && !peer.doomed) return false;
    if (ch.stalled()) {
      stalled_++;
    } else if (ch.broken()) {
      corrupt_++;
    }
    broken.push_back(id);
    return true;
  };
  for (const auto& [id, peer] : loop_channels()) {
    HostChannel& ch = *peer->channel;
    if (doomed(id, *peer)) continue;
    serving_ = {id, peer.get()};
    if (!ch.flush()) {  // replies are stuck: read nothing more until the guest catches up
      if (!peer->replies_stuck) reply_stalls_++;
      peer->replies_stuck = true;
      continue;
    }
    peer->replies_stuck = false;
    int burst = 0;
    if (ch.requests_pending() && events_->accepting(id)) {
      bool stamped = false;
      for (; burst < kRequestsPerBurst; ++burst) {
        const auto r = ch.read_request(&msg);
        if (r == RingReader::Result::kEmpty) break;
        if (r == RingReader::Result::kCorrupt) break;  // counted when the channel is closed
        if (!stamped && wants_reply(msg)) {
          // The pass's start stands for the read: a clock read here would sit
          // between a quick call and its answer. Stamped after every reply
          // written so far, so the answer to this request is owed.
          const Clock::time_point replied{
              Clock::duration(last_reply_ns_.load(std::memory_order_relaxed))};
          last_read_ = std::max(started, replied + Clock::duration(1));
          stamped = true;
        }
        if (peer->creds.real_vm && kernel_attached(id, peer, msg)) continue;
        events_->on_request(id, msg);
      }
    }
    if (burst > 0) {
      events_->on_burst_end(id);
      requests_ += burst;
      worked = true;
    }
    doomed(id, *peer);
  }
  serving_ = {};
  if (worked) events_->on_pass_end();
  for (uint64_t id : broken) close_channel(id);
  return worked;
}

void HostLoop::sleep_until_event() {
  bool pending = false;
  for (const auto& [id, peer] : loop_channels()) {
    HostChannel& ch = *peer->channel;
    // A guest that does not read its replies gets nothing more read until it
    // does (it rings when it reads): its pending requests must not keep the
    // loop from sleeping, or one such guest spins a host core.
    const bool had_outbox = ch.has_outbox();
    const bool stuck = had_outbox && !ch.flush();
    if (had_outbox && !stuck) pending = true;  // it caught up: serve it now
    // Only a channel the loop would read asks its guest to ring: one whose
    // tenant may not queue more is woken by wake() when there is room, and a
    // guest ringing for every request meanwhile would only spin the loop.
    const bool serve = !stuck && events_->accepting(id);
    ch.set_sleeping(serve);  // includes a full barrier
    if (serve && ch.requests_pending()) pending = true;
  }
  if (!pending) {
    sleeps_++;
    // Plain VMs ring nobody: with any of them, nap briefly (50 us, doubling
    // to 5 ms while idle) instead of sleeping until an event.
    int timeout_us = 1000 * 1000;
    if (plain_channels_ > 0) {
      plain_nap_us_ = plain_nap_us_ == 0 ? 50 : std::min(plain_nap_us_ * 2, 5000);
      timeout_us = plain_nap_us_;
    }
    handle_events(timeout_us);
  }
  for (const auto& [id, peer] : loop_channels()) peer->channel->set_sleeping(false);
}

void HostLoop::handle_events(int timeout_us) {
  epoll_event events[64];
  const timespec timeout{timeout_us / 1000000, (timeout_us % 1000000) * 1000L};
  const int n = epoll_pwait2(epoll_fd_, events, 64, &timeout, nullptr);
  for (int i = 0; i < n; ++i) {
    const uint64_t t = events[i].data.u64;
    const int fd = fd_of(t);
    switch (kind_of(t)) {
      case kListen:
        accept_clients();
        break;
      case kWake:
        wake_.drain();
        apply_pending_vms();
        events_->on_wake();
        break;
      case kVmListen:
        accept_vm(fd);
        break;
      case kHello:
        handle_hello(fd);
        break;
      case kClientSocket: {
        // Neither a simulated VM (after its hello) nor QEMU (ivshmem) ever
        // writes: input or hang-up means it is gone.
        auto it = by_socket_.find(fd);
        if (it != by_socket_.end()) close_channel(it->second);
        break;
      }
      case kDoorbell: {
        uint64_t v;
        [[maybe_unused]] ssize_t r = read(fd, &v, sizeof v);
        break;
      }
    }
  }
}

void HostLoop::accept_clients() {
  for (;;) {
    const int sock = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (sock < 0) return;
    ucred cred{};
    socklen_t len = sizeof cred;
    PeerCredentials peer;
    if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
      peer = {cred.pid, cred.uid, cred.gid};
    }
    pending_hello_[sock] = peer;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = tag(kHello, sock);
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, sock, &ev);
  }
}

void HostLoop::handle_hello(int sock) {
  const PeerCredentials creds = pending_hello_[sock];
  pending_hello_.erase(sock);
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, sock, nullptr);

  vgpu_hello hello{};
  const long n = recv_with_fds(sock, {reinterpret_cast<uint8_t*>(&hello), sizeof hello}, nullptr, 0);
  if (n != static_cast<long>(sizeof hello) || hello.magic != VGPU_HELLO_MAGIC) {
    refuse(sock, Status::kInvalidValue, "not a vgpu hello");
    close(sock);
    return;
  }
  if (hello.version != VGPU_HANDOVER_VERSION) {
    // The reader is the guest's user: say which side to update.
    refuse(sock, Status::kInsufficientDriver,
           "this guest library speaks hand-over version " + std::to_string(hello.version) +
               ", vgpud speaks " + std::to_string(VGPU_HANDOVER_VERSION) +
               ": install the same vgpu release on both sides");
    close(sock);
    return;
  }
  if (!valid_vm_name(hello.vm_name, sizeof hello.vm_name)) {
    refuse(sock, Status::kInvalidValue, "VM names are 1-63 characters of A-Z a-z 0-9 . _ -");
    close(sock);
    return;
  }
  const std::string vm(hello.vm_name);
  auto p = std::make_shared<Peer>();
  p->sock = sock;
  p->vm = vm;
  p->creds = creds;
  if (Status s = HostChannel::create(geometry_, &p->channel); !ok(s)) {
    refuse(sock, s, "the host could not create the shared-memory region");
    close(sock);
    return;
  }
  const uint64_t id = next_channel_++;
  std::string why;
  if (Status s = events_->on_open(id, vm, creds, p->channel->region().data(), &why); !ok(s)) {
    refuse(sock, s, why);
    close(sock);
    return;
  }
  vgpu_welcome w{};
  w.magic = VGPU_WELCOME_MAGIC;
  w.region_size = p->channel->region().geometry().region_size();
  const int fds[3] = {p->channel->region().fd(), p->channel->request_doorbell_fd(),
                      p->channel->response_doorbell_fd()};
  if (!send_with_fds(sock, {reinterpret_cast<const uint8_t*>(&w), sizeof w}, fds)) {
    events_->on_close(id, p);
    close(sock);
    return;
  }
  {
    WriterLock lock(mu_);
    channels_[id] = p;
  }
  by_socket_[sock] = id;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.u64 = tag(kClientSocket, sock);
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, sock, &ev);
  ev.events = EPOLLIN;
  ev.data.u64 = tag(kDoorbell, p->channel->request_doorbell_fd());
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, p->channel->request_doorbell_fd(), &ev);
  opened_++;
}

HostLoop::Peer* HostLoop::loop_peer(uint64_t channel) const {
  if (channel == serving_.id) return serving_.peer;
  auto it = loop_channels().find(channel);
  return it == loop_channels().end() ? nullptr : it->second.get();
}

void HostLoop::close_channel(uint64_t id) {
  auto it = loop_channels().find(id);
  if (it == loop_channels().end()) return;
  if (serving_.id == id) serving_ = {};
  std::shared_ptr<Peer> peer = it->second;
  if (peer->sock >= 0) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, peer->sock, nullptr);
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, peer->channel->request_doorbell_fd(), nullptr);
  events_->on_close(id, peer);  // releases everything the client held
  peer->channel->close();
  {
    WriterLock lock(mu_);
    channels_.erase(id);
  }
  if (peer->sock >= 0) {
    by_socket_.erase(peer->sock);
    close(peer->sock);
  }
  if (peer->plain) plain_channels_--;
  for (auto& [fd, server] : vm_servers_) {
    if (server->channel == id) server->channel = 0;  // QEMU may connect again
  }
  closed_++;
}

}  // namespace vgpu::transport
