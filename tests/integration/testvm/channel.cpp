#include "channel.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "vgpu/protocol/handover.h"
#include "vgpu/transport/unix_socket.h"

namespace vgpu::testvm {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::unique_ptr<Channel> Channel::connect(const std::string& socket_path, const std::string& vm,
                                          std::string* why) {
  const int sock = transport::connect_unix(socket_path, why);
  if (sock < 0) return nullptr;
  vgpu_hello hello{};
  hello.magic = VGPU_HELLO_MAGIC;
  hello.version = VGPU_HANDOVER_VERSION;
  std::strncpy(hello.vm_name, vm.c_str(), sizeof hello.vm_name - 1);
  vgpu_welcome welcome{};
  std::vector<int> fds;
  if (!transport::send_with_fds(sock, {reinterpret_cast<const uint8_t*>(&hello), sizeof hello},
                                {}) ||
      transport::recv_with_fds(sock, {reinterpret_cast<uint8_t*>(&welcome), sizeof welcome}, &fds,
                               3) != static_cast<long>(sizeof welcome) ||
      welcome.status != 0 || fds.size() != 3) {
    welcome.message[sizeof welcome.message - 1] = '\0';
    *why = std::string("hand-over refused: ") + welcome.message;
    for (int fd : fds) close(fd);
    close(sock);
    return nullptr;
  }
  std::unique_ptr<transport::Region> region;
  if (!ok(transport::Region::attach(fds[0], &region, why))) {
    close(fds[1]);
    close(fds[2]);
    close(sock);
    return nullptr;
  }
  return std::unique_ptr<Channel>(new Channel(sock, std::move(region), transport::Doorbell(fds[1]),
                                              transport::Doorbell(fds[2])));
}

std::unique_ptr<Channel> Channel::attach_file(const std::string& path, std::string* why) {
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    *why = "cannot open " + path;
    return nullptr;
  }
  std::unique_ptr<transport::Region> region;
  if (!ok(transport::Region::attach(fd, &region, why))) return nullptr;
  return std::unique_ptr<Channel>(
      new Channel(-1, std::move(region), transport::Doorbell(), transport::Doorbell()));
}

Channel::Channel(int sock, std::unique_ptr<transport::Region> region, transport::Doorbell host_bell,
                 transport::Doorbell own_bell)
    : sock_(sock),
      region_(std::move(region)),
      host_bell_(std::move(host_bell)),
      own_bell_(std::move(own_bell)) {
  auto* h = region_->header();
  requests_ = transport::RingWriter(&h->req, region_->req_ring(), ring_size());
  replies_ = transport::RingReader(&h->resp, region_->resp_ring(), ring_size());
}

Channel::~Channel() {
  if (sock_ >= 0) close(sock_);
}

bool Channel::try_send(std::span<const uint8_t> message) {
  const std::span<const uint8_t> parts[1] = {message};
  if (requests_.write(parts) != transport::RingWriter::Result::kOk) return false;
  if (requests_.consumer_waiting()) ring_host();
  return true;
}

bool Channel::send(std::span<const uint8_t> message, std::chrono::milliseconds limit) {
  const auto end = Clock::now() + limit;
  while (!try_send(message)) {
    if (host_gone() || Clock::now() > end) return false;
    requests_.set_producer_waiting(true);
    ring_host();
    nap();
    requests_.set_producer_waiting(false);
  }
  return true;
}

transport::RingReader::Result Channel::try_receive(std::vector<uint8_t>* out) {
  const auto r = replies_.read(out);
  if (r == transport::RingReader::Result::kMessage && replies_.producer_needs_wake()) ring_host();
  return r;
}

bool Channel::receive(std::vector<uint8_t>* out, std::chrono::milliseconds limit) {
  const auto end = Clock::now() + limit;
  for (;;) {
    const auto r = try_receive(out);
    if (r == transport::RingReader::Result::kMessage) return true;
    if (r == transport::RingReader::Result::kCorrupt || host_gone() || Clock::now() > end) {
      return false;
    }
    replies_.set_consumer_waiting(true);
    if (replies_.empty()) nap();
    replies_.set_consumer_waiting(false);
  }
}

void Channel::nap() {
  if (!own_bell_.valid()) {
    std::this_thread::sleep_for(50us);
    return;
  }
  pollfd p{own_bell_.fd(), POLLIN, 0};
  if (poll(&p, 1, 10) > 0) own_bell_.drain();
}

uint32_t Channel::request_head() const {
  return std::atomic_ref<uint32_t>(region_->header()->req.head).load(std::memory_order_acquire);
}

void Channel::publish_request_head(uint32_t head) {
  std::atomic_ref<uint32_t>(region_->header()->req.head).store(head, std::memory_order_release);
  ring_host();
}

void Channel::ring_host() {
  if (host_bell_.valid()) host_bell_.ring();
}

bool Channel::host_gone() {
  const uint32_t state = std::atomic_ref<uint32_t>(region_->header()->host_state)
                             .load(std::memory_order_acquire);
  if (state == VGPU_HOST_CLOSED) return true;
  if (sock_ < 0) return false;
  pollfd p{sock_, POLLIN, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLIN));
}

}  // namespace vgpu::testvm
