// The admin socket: a Unix stream socket at <runtime-dir>/vgpud-admin.sock
// carrying JSON lines (see policy/admin/admin_protocol.h). One thread polls the
// listening socket and its connections (Limits); each complete line is
// handed, with the peer's uid from SO_PEERCRED, to the handler, and its answer
// is written back as one line. The socket is world-connectable: who may do
// what is decided from the peer's uid, never from what it sends.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "vgpu/result.h"

namespace vgpu::host {

// The socket is open to every local user, so no user may take it from the
// others: connections are limited per uid and in all, some are kept for the
// privileged uids (root, vgpud's own), and a connection that sends no
// complete request for `idle_timeout` is closed.
struct AdminLimits {
  size_t max_clients = 32;
  size_t reserved_for_privileged = 8;  // of max_clients
  size_t max_per_uid = 4;              // privileged uids: only max_clients
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(2)};
  std::vector<uint32_t> privileged = {0};
};

class AdminServer {
 public:
  // Answers one request line from a peer with uid `uid`; returns the answer
  // line. It should not throw; if it does, the peer gets an error answer and
  // the server goes on (a request must never end the daemon).
  using Handler = std::function<std::string(uint32_t uid, const std::string& line)>;

  using Limits = AdminLimits;

  AdminServer(std::string path, Handler handler, Limits limits = {});
  ~AdminServer();
  // Binds the socket and starts the thread: invalid argument for a path too
  // long for a socket, unavailable when it cannot listen there.
  Result start();
  void stop();

 private:
  void run();
  std::string answer(uint32_t uid, const std::string& line) const;
  // Why a new connection from `uid` is refused when `clients` are open ("" if it is not).
  std::string refusal(uint32_t uid, const std::vector<uint32_t>& clients) const;

  const std::string path_;
  const Handler handler_;
  const Limits limits_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: stop()
  std::atomic<bool> running_{false};
  std::thread thread_;
};

}  // namespace vgpu::host
