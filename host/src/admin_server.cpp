#include "vgpu/host/admin_server.h"

#include <poll.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

#include "admin_protocol.h"
#include "vgpu/transport/unix_socket.h"

namespace vgpu::host {
namespace {

using Clock = std::chrono::steady_clock;

struct Client {
  int fd = -1;
  uint32_t uid = ~0u;
  std::string buffer;
  Clock::time_point deadline;  // closed if no complete request comes by then
};

// Writes all of `data`, giving up on a peer that does not read (send timeout).
bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

AdminServer::AdminServer(std::string path, Handler handler, Limits limits)
    : path_(std::move(path)), handler_(std::move(handler)), limits_(std::move(limits)) {}

std::string AdminServer::refusal(uint32_t uid, const std::vector<uint32_t>& clients) const {
  const bool privileged = std::find(limits_.privileged.begin(), limits_.privileged.end(), uid) !=
                          limits_.privileged.end();
  if (clients.size() >= limits_.max_clients) return "vgpud is busy: too many admin connections";
  if (privileged) return "";
  if (clients.size() + limits_.reserved_for_privileged >= limits_.max_clients) {
    return "vgpud is busy: too many admin connections (the rest are kept for root)";
  }
  if (static_cast<size_t>(std::count(clients.begin(), clients.end(), uid)) >= limits_.max_per_uid) {
    return "too many admin connections from uid " + std::to_string(uid) + " (at most " +
           std::to_string(limits_.max_per_uid) + "); close one";
  }
  return "";
}

AdminServer::~AdminServer() { stop(); }

Result AdminServer::start() {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path_.size() >= sizeof addr.sun_path)
    return Result::invalid_argument("admin socket path too long: " + path_);
  std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  unlink(path_.c_str());  // a stale socket from a daemon that died
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      !transport::set_mode_no_follow(path_, 0666) || listen(listen_fd_, 16) != 0) {
    Result failed = Result::unavailable("cannot listen on " + path_ + ": " + std::strerror(errno));
    if (listen_fd_ >= 0) close(listen_fd_);
    listen_fd_ = -1;
    return failed;
  }
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  running_ = true;
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "vgpu-admin");  // for top -H, perf, gdb
    run();
  });
  return {};
}

void AdminServer::stop() {
  if (!thread_.joinable()) return;
  running_ = false;
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
  thread_.join();
  close(listen_fd_);
  close(wake_fd_);
  unlink(path_.c_str());
  listen_fd_ = wake_fd_ = -1;
}

std::string AdminServer::answer(uint32_t uid, const std::string& line) const {
  try {
    return handler_(uid, line);
  } catch (const std::exception& e) {
    spdlog::error("admin: a request from uid {} failed: {}", uid, e.what());
    return R"({"ok":false,"error":"vgpud could not handle that request"})";
  }
}

void AdminServer::run() {
  std::vector<Client> clients;
  std::vector<uint32_t> uids;
  while (running_) {
    std::vector<pollfd> fds = {{wake_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    auto first_deadline = Clock::time_point::max();
    for (const Client& c : clients) {
      fds.push_back({c.fd, POLLIN, 0});
      first_deadline = std::min(first_deadline, c.deadline);
    }
    int wait_ms = -1;
    if (!clients.empty()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(first_deadline - Clock::now());
      wait_ms = static_cast<int>(std::clamp<int64_t>(left.count(), 0, 60'000));
    }
    if (poll(fds.data(), fds.size(), wait_ms) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("vgpud: admin socket: poll failed: {}", std::strerror(errno));
      break;
    }
    if (fds[0].revents) break;
    if (fds[1].revents & POLLIN) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        ucred cred{};
        socklen_t len = sizeof cred;
        const timeval timeout{2, 0};
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
        uids.clear();
        for (const Client& c : clients) uids.push_back(c.uid);
        const std::string no = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0
                                   ? "cannot tell who you are"
                                   : refusal(cred.uid, uids);
        if (!no.empty()) {
          write_all(fd, nlohmann::json{{"ok", false}, {"error", no}}.dump() + "\n");
          close(fd);
        } else {
          clients.push_back({fd, cred.uid, {}, Clock::now() + limits_.idle_timeout});
        }
      }
    }
    // Serve every client with input; drop those that closed or misbehaved.
    for (size_t i = 0; i + 2 < fds.size(); ++i) {  // the clients polled (not one just accepted)
      if (!(fds[i + 2].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Client& c = clients[i];
      char buf[16384];
      const ssize_t n = recv(c.fd, buf, sizeof buf, 0);
      bool keep = n > 0;
      if (keep) c.buffer.append(buf, static_cast<size_t>(n));
      size_t nl = 0;
      while (keep && (nl = c.buffer.find('\n')) != std::string::npos) {
        const std::string line = c.buffer.substr(0, nl);
        c.buffer.erase(0, nl + 1);
        keep = write_all(c.fd, answer(c.uid, line) + "\n");
        c.deadline = Clock::now() + limits_.idle_timeout;
      }
      if (keep && c.buffer.size() > admin::kMaxLineBytes) {
        write_all(c.fd, R"({"ok":false,"error":"request line too long"})"
                        "\n");
        keep = false;
      }
      if (!keep) {
        close(c.fd);
        c.fd = -1;
      }
    }
    // Connections that sent no complete request in time (idle, or a line
    // dribbled out byte by byte) give their place back.
    const auto now = Clock::now();
    for (Client& c : clients) {
      if (c.fd < 0 || now < c.deadline) continue;
      write_all(c.fd, R"({"ok":false,"error":"closed: no request for too long"})"
                      "\n");
      close(c.fd);
      c.fd = -1;
    }
    std::erase_if(clients, [](const Client& c) { return c.fd < 0; });
  }
  for (const Client& c : clients) close(c.fd);
}

}  // namespace vgpu::host
