#include "metrics_server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <pthread.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdlib>

namespace vgpu::daemon {

Result parse_listen_address(const std::string& text, std::string* host, int* port) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos)
    return Result::invalid_argument("--metrics-listen " + text +
                                    ": expected HOST:PORT (e.g. 127.0.0.1:9400)");
  std::string h = text.substr(0, colon);
  const std::string p = text.substr(colon + 1);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  char* end = nullptr;
  const long n = p.empty() ? -1 : std::strtol(p.c_str(), &end, 10);
  if (n < 0 || n > 65535 || (end && *end != '\0'))
    return Result::invalid_argument("--metrics-listen " + text +
                                    ": the port must be a number from 0 to 65535");
  if (h.find_first_of("[]/ ") != std::string::npos)
    return Result::invalid_argument("--metrics-listen " + text +
                                    ": not a host name or address: " + h);
  *host = h.empty() ? "0.0.0.0" : h;
  *port = static_cast<int>(n);
  return {};
}

MetricsServer::MetricsServer() = default;

MetricsServer::~MetricsServer() { stop(); }

Result MetricsServer::start(const std::string& listen, Render render) {
  int port = 0;
  if (Result r = parse_listen_address(listen, &host_, &port); !r.ok()) return r;
  server_ = std::make_unique<httplib::Server>();
  server_->new_task_queue = [] { return new httplib::ThreadPool(1); };  // one scrape at a time
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a
  // second vgpud on the same port would take half the scrapes unnoticed.
  server_->set_socket_options([](socket_t sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server_->Get("/metrics", [this, render](const httplib::Request& req, httplib::Response& res) {
    res.set_content(render(), "text/plain; version=0.0.4; charset=utf-8");
    // One thread serves scrapes (the task queue above): a plain counter.
    spdlog::debug("vgpud: metrics scrape {} from {}", ++scrapes_, req.remote_addr);
  });
  port_ = port == 0 ? server_->bind_to_any_port(host_) : port;
  if (port_ <= 0 || (port != 0 && !server_->bind_to_port(host_, port))) {
    server_.reset();
    return Result::unavailable("--metrics-listen " + listen +
                               ": cannot listen there (in use, or not an address of this host)");
  }
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "vgpu-metrics");
    server_->listen_after_bind();
    listened_ = true;
  });
  return {};
}

void MetricsServer::stop() {
  if (!server_) return;
  // httplib's stop() does nothing before the server runs: wait until it does.
  while (!server_->is_running() && !listened_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  server_->stop();
  if (thread_.joinable()) thread_.join();
  server_.reset();
}

}  // namespace vgpu::daemon
