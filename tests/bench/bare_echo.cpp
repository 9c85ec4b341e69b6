#include "bare_echo.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>

#include "vgpu/protocol/codec.h"
#include "vgpu/protocol/handover.h"
#include "vgpu/transport/doorbell.h"
#include "vgpu/transport/host_channel.h"
#include "vgpu/transport/unix_socket.h"

namespace vgpu::bench {
namespace {

using Clock = std::chrono::steady_clock;
using transport::HostChannel;
using transport::RingReader;

// Accepts the one client and hands it a region, as vgpud's loop does.
std::unique_ptr<HostChannel> hand_over(int listen_fd, int* sock) {
  pollfd p{listen_fd, POLLIN, 0};
  if (poll(&p, 1, 10000) <= 0) return nullptr;
  *sock = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (*sock < 0) return nullptr;
  vgpu_hello hello{};
  if (transport::recv_with_fds(*sock, {reinterpret_cast<uint8_t*>(&hello), sizeof hello}, nullptr,
                               0) != static_cast<long>(sizeof hello)) {
    return nullptr;
  }
  std::unique_ptr<HostChannel> ch;
  if (!ok(HostChannel::create(transport::RegionGeometry{}, &ch))) return nullptr;
  vgpu_welcome w{};
  w.magic = VGPU_WELCOME_MAGIC;
  w.region_size = ch->region().geometry().region_size();
  const int fds[3] = {ch->region().fd(), ch->request_doorbell_fd(), ch->response_doorbell_fd()};
  if (!transport::send_with_fds(*sock, {reinterpret_cast<const uint8_t*>(&w), sizeof w}, fds)) {
    return nullptr;
  }
  return ch;
}

[[noreturn]] void serve(int listen_fd) {
  int sock = -1;
  std::unique_ptr<HostChannel> ch = hand_over(listen_fd, &sock);
  if (!ch) _exit(1);
  std::vector<uint8_t> msg;
  const uint64_t payload = 0;
  auto last_work = Clock::now();
  for (;;) {
    if (ch->read_request(&msg) == RingReader::Result::kMessage) {
      vgpu_msg_header h;
      std::memcpy(&h, msg.data(), sizeof h);
      h.flags = VGPU_MSG_REPLY;
      h.payload_len = sizeof payload;
      const std::span<const uint8_t> parts[2] = {
          {reinterpret_cast<const uint8_t*>(&h), sizeof h},
          {reinterpret_cast<const uint8_t*>(&payload), sizeof payload}};
      ch->write_reply(parts);
      last_work = Clock::now();
      continue;
    }
    if (Clock::now() - last_work < transport::kPollBeforeSleep) {
      __builtin_ia32_pause();
      continue;
    }
    // Sleep on the request doorbell (and the socket, for the hang-up).
    ch->set_sleeping(true);
    if (!ch->requests_pending()) {
      pollfd p[2] = {{ch->request_doorbell_fd(), POLLIN, 0}, {sock, POLLIN, 0}};
      poll(p, 2, 1000);
      if (p[1].revents & (POLLIN | POLLHUP)) _exit(0);
      ch->drain_doorbell();
    }
    ch->set_sleeping(false);
    last_work = Clock::now();
  }
}

}  // namespace

pid_t start_bare_echo(const std::string& socket_path) {
  std::string why;
  const int listen_fd = transport::listen_unix(socket_path, &why);
  if (listen_fd < 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) serve(listen_fd);
  close(listen_fd);
  return pid;
}

}  // namespace vgpu::bench
