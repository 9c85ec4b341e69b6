// vgpud --metrics-listen HOST:PORT: GET /metrics answers in Prometheus's text
// format (metrics.h) from a thread of its own (cpp-httplib); any other path
// is 404. The metrics name VMs, students and courses: listen on a local or
// firewalled address.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "vgpu/result.h"

namespace httplib {
class Server;
}

namespace vgpu::daemon {

// "127.0.0.1:9400", "[::1]:9400", ":9400" (every address). Invalid argument
// for anything else; port 0 lets the system pick one.
Result parse_listen_address(const std::string& text, std::string* host, int* port);

class MetricsServer {
 public:
  using Render = std::function<std::string()>;
  MetricsServer();
  ~MetricsServer();  // stops it
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Binds and starts serving: invalid argument for a bad address, unavailable
  // when it cannot bind (in use, no such address).
  Result start(const std::string& listen, Render render);
  void stop();
  int port() const { return port_; }
  const std::string& host() const { return host_; }

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<bool> listened_{false};  // listen_after_bind returned
  uint64_t scrapes_ = 0;               // answered so far (the serving thread's)
  std::string host_;
  int port_ = 0;
};

}  // namespace vgpu::daemon
