// The admin socket: a Unix stream socket at <runtime-dir>/vgpud-admin.sock
// carrying JSON lines (see cli/admin/admin_protocol.h). One thread polls the
// listening socket and up to kMaxClients connections; each complete line is
// handed, with the peer's uid from SO_PEERCRED, to the handler, and its answer
// is written back as one line. The socket is world-connectable: who may do
// what is decided from the peer's uid, never from what it sends.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "vgpu/protocol/status.h"

namespace vgpu::daemon {

class AdminServer {
 public:
  // Answers one request line from a peer with uid `uid`; returns the answer
  // line. It should not throw; if it does, the peer gets an error answer and
  // the server goes on (a request must never end the daemon).
  using Handler = std::function<std::string(uint32_t uid, const std::string& line)>;
  static constexpr int kMaxClients = 32;

  AdminServer(std::string path, Handler handler);
  ~AdminServer();
  Status start(std::string* why);
  void stop();

 private:
  void run();
  std::string answer(uint32_t uid, const std::string& line) const;

  const std::string path_;
  const Handler handler_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: stop()
  std::atomic<bool> running_{false};
  std::thread thread_;
};

}  // namespace vgpu::daemon
