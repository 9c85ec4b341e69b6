#include "metrics_server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <pthread.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdlib>

namespace vgpu::daemon {

bool parse_listen_address(const std::string& text, std::string* host, int* port,
                          std::string* why) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    *why = "--metrics-listen " + text + ": expected HOST:PORT (e.g. 127.0.0.1:9400)";
    return false;
  }
  std::string h = text.substr(0, colon);
  const std::string p = text.substr(colon + 1);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  char* end = nullptr;
  const long n = p.empty() ? -1 : std::strtol(p.c_str(), &end, 10);
  if (n < 0 || n > 65535 || (end && *end != '\0')) {
    *why = "--metrics-listen " + text + ": the port must be a number from 0 to 65535";
    return false;
  }
  if (h.find_first_of("[]/ ") != std::string::npos) {
    *why = "--metrics-listen " + text + ": not a host name or address: " + h;
    return false;
  }
  *host = h.empty() ? "0.0.0.0" : h;
  *port = static_cast<int>(n);
  return true;
}

MetricsServer::MetricsServer() = default;

MetricsServer::~MetricsServer() { stop(); }

Status MetricsServer::start(const std::string& listen, Render render, std::string* why) {
  int port = 0;
  if (!parse_listen_address(listen, &host_, &port, why)) return Status::kInvalidValue;
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
    *why = "--metrics-listen " + listen + ": cannot listen there (in use, or not an address of "
           "this host)";
    server_.reset();
    return Status::kUnknown;
  }
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "vgpu-metrics");
    server_->listen_after_bind();
    listened_ = true;
  });
  return Status::kSuccess;
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
