// The receiving end of sd_notify(3): a datagram socket in a fresh directory,
// whose path is what a service manager puts in $NOTIFY_SOCKET. Used by the
// service notifier's unit test and by the test of a real vgpud under it.
#pragma once

#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace vgpu::test {

class NotifySocket {
 public:
  NotifySocket() {
    char dir[] = "/tmp/vgpu-notify-XXXXXX";
    if (!mkdtemp(dir)) throw std::runtime_error("mkdtemp failed");
    dir_ = dir;
    path_ = dir_ + "/notify.sock";
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
      throw std::runtime_error("cannot bind " + path_);
  }
  ~NotifySocket() {
    if (fd_ >= 0) close(fd_);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  const std::string& path() const { return path_; }

  // The next message, or "" if none comes within `limit`.
  std::string next(std::chrono::milliseconds limit = std::chrono::seconds(60)) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(limit.count())) != 1) return "";
    char buf[4096];
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }
  // The next message that is not a watchdog ping.
  std::string next_state(std::chrono::milliseconds limit = std::chrono::seconds(60)) {
    for (;;) {
      std::string m = next(limit);
      if (m != "WATCHDOG=1") return m;
    }
  }
  // Whether a message is waiting now.
  bool pending() {
    pollfd p{fd_, POLLIN, 0};
    return poll(&p, 1, 0) == 1;
  }

 private:
  std::string dir_, path_;
  int fd_ = -1;
};

}  // namespace vgpu::test
