// vgpud --metrics-listen scraped by a real Prometheus (Debian's): a student's
// VM runs kernels, and a query through Prometheus's HTTP API finds its GPU
// time with its student and course; vgpud's own page is checked as well.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "quota_harness.h"

using namespace vgpu::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

// GET http://127.0.0.1:port/path: the body, or "" when nothing answers.
std::string http_get(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (fd >= 0) close(fd);
    return "";
  }
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return "";
  }
  std::string response;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) response.append(buf, static_cast<size_t>(n));
  close(fd);
  const size_t body = response.find("\r\n\r\n");
  return body == std::string::npos ? "" : response.substr(body + 4);
}

// A port nothing listens on now (the system's choice).
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

std::string url_encoded(const std::string& s) {
  std::string out;
  char buf[4];
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

std::string prometheus_path() {
  for (const char* p : {"/usr/bin/prometheus", "/usr/local/bin/prometheus"})
    if (access(p, X_OK) == 0) return p;
  return "";
}

}  // namespace

TEST_CASE("Prometheus scrapes vgpud: a student's GPU time by VM and student and course", "[metrics]") {
  const std::string prometheus = prometheus_path();
  REQUIRE_FALSE(prometheus.empty());  // Debian's prometheus: scripts/install-deps.sh
  // At debug level vgpud logs each scrape it answered: the test waits on
  // those lines, not on a clock.
  Daemon d({"--metrics-listen", "127.0.0.1:0", "--log-level", "debug"});
  REQUIRE(d.wait_for_log("vgpud: metrics at http://", 60s));
  std::smatch m;
  const std::string log = d.log();
  REQUIRE(std::regex_search(log, m, std::regex("metrics at http://127\\.0\\.0\\.1:([0-9]+)/metrics")));
  const int port = std::stoi(m[1]);
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"course", "create", "gpu101"},
                                             {"student", "add", "alice", "--course", "gpu101", "--vm", "lab-1"},
                                             {"quota", "set", "alice", "--gpu-time", "2h/week", "--memory", "1GiB"}}) {
    const RunResult r = vgpuctl(d.runtime_dir(), args);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
  }
  // lab-1 runs kernels and ends; then another of its programs stays
  // connected (holding memory) while Prometheus scrapes.
  const RunResult busy = d.run("lab-1", "busy", {"1000", "200"});
  INFO(busy.output);
  REQUIRE(busy.exit_code == 0);
  const std::string held = d.runtime_dir() + "/held.txt";
  auto program = d.start("lab-1", "cross_tenant", {"owner", held});
  REQUIRE(program->wait_for_output("published", 120s));

  // vgpud's own page, first: lab-1's program has run, and another holds its
  // memory now.
  const std::string page = http_get(port, "/metrics");
  const std::string series = "vgpu_vm_gpu_seconds_total{vm=\"lab-1\",student=\"alice\",course=\"gpu101\"}";
  INFO(page);
  REQUIRE(page.find(series) != std::string::npos);
  CHECK(page.find("vgpu_vm_budget_remaining_seconds{vm=\"lab-1\",student=\"alice\",course=\"gpu101\"}") !=
        std::string::npos);
  CHECK(page.find("vgpu_vm_memory_cap_bytes{vm=\"lab-1\",student=\"alice\",course=\"gpu101\"} 1073741824") !=
        std::string::npos);
  CHECK(http_get(port, "/other").find("vgpu_") == std::string::npos);

  // A real Prometheus scraping it every second.
  const std::string dir = d.runtime_dir() + "/prometheus";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/prometheus.yml")
      << "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: vgpud\n"
         "    static_configs:\n      - targets: ['127.0.0.1:"
      << port << "']\n";
  const int web = free_port();
  Process prom({prometheus, "--config.file=" + dir + "/prometheus.yml",
                "--storage.tsdb.path=" + dir + "/data",
                "--web.listen-address=127.0.0.1:" + std::to_string(web)},
               dir + "/prometheus.log");
  // Scrape 1 was the test's own; Prometheus's first is 2. Once it has begun
  // its second (3), the samples of its first are stored and can be queried.
  REQUIRE(d.wait_for_log("vgpud: metrics scrape 3 ", 120s));
  const std::string query =
      "/api/v1/query?query=vgpu_vm_gpu_seconds_total%7Bstudent%3D%22alice%22%2Ccourse%3D%22gpu101%22%7D";
  const json answer = json::parse(http_get(web, query), nullptr, false);
  INFO(answer.dump() << "\n" << read_file(dir + "/prometheus.log"));
  REQUIRE(answer.is_object());
  CHECK(answer.value("status", "") == "success");
  REQUIRE_FALSE(answer["data"]["result"].empty());
  CHECK(answer["data"]["result"][0]["metric"]["vm"] == "lab-1");
  CHECK(std::stod(answer["data"]["result"][0]["value"][1].get<std::string>()) > 0);
  // lab-1's calls were timed: the calls its programs waited for (the
  // immediate ones: queries, allocations, module loads), as a histogram
  // Prometheus can take a quantile of.
  const json calls = json::parse(
      http_get(web, "/api/v1/query?query=" +
                        url_encoded("histogram_quantile(0.99, sum by (le) "
                                    "(vgpu_vm_call_duration_seconds_bucket{vm=\"lab-1\","
                                    "kind=\"immediate\"}))")),
      nullptr, false);
  INFO(calls.dump());
  REQUIRE(calls.is_object());
  CHECK(calls.value("status", "") == "success");
  REQUIRE_FALSE(calls["data"]["result"].empty());
  const double p99 = std::stod(calls["data"]["result"][0]["value"][1].get<std::string>());
  CHECK(p99 > 0);
  CHECK(p99 <= 10);
  // And Prometheus saw its target up.
  const json up = json::parse(http_get(web, "/api/v1/query?query=up%7Bjob%3D%22vgpud%22%7D"), nullptr, false);
  INFO(up.dump());
  REQUIRE(up.is_object());
  REQUIRE_FALSE(up["data"]["result"].empty());
  CHECK(up["data"]["result"][0]["value"][1] == "1");

  // Every query of the Grafana dashboard vgpu installs is valid PromQL here,
  // and the budget left finds alice.
  std::ifstream dashboard_file(VGPU_TEST_DASHBOARD);
  const json dashboard = json::parse(dashboard_file, nullptr, false);
  REQUIRE(dashboard.is_object());
  int queries = 0;
  for (const json& panel : dashboard["panels"]) {
    for (const json& target : panel["targets"]) {
      std::string expr = target["expr"].get<std::string>();
      for (size_t at; (at = expr.find("$course")) != std::string::npos;) expr.replace(at, 7, ".*");
      const json r = json::parse(http_get(web, "/api/v1/query?query=" + url_encoded(expr)), nullptr, false);
      INFO(panel["title"] << ": " << expr << " -> " << r.dump());
      REQUIRE(r.is_object());
      CHECK(r.value("status", "") == "success");
      if (panel["id"] == 3) CHECK_FALSE(r["data"]["result"].empty());  // alice's budget
      queries++;
    }
  }
  CHECK(queries >= 6);

  prom.signal(SIGTERM);
  prom.wait(60s);
  std::filesystem::remove(held);  // the holding program ends
  const RunResult owner = program->wait(60s);
  CHECK(owner.exit_code == 0);
}

TEST_CASE("vgpud's request count: a 2D copy costs a request per chunk of rows, not per row", "[metrics]") {
  Daemon d;
  for (const std::string path : {"pitched_copies", "static/pitched_copies"}) {
    const json before = daemon_status(d.runtime_dir());
    REQUIRE(before.is_object());
    const RunResult r = d.run("alice", path);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const json after = daemon_status(d.runtime_dir());
    REQUIRE(after.is_object());
    const uint64_t requests =
        after["transport"]["requests"].get<uint64_t>() - before["transport"]["requests"].get<uint64_t>();
    // The program copies 4096 rows four times, 1000 rows twice, a 3D box of
    // 1024 rows both ways, and sets 1000 rows: row by row, over 21,000
    // requests.
    INFO(path << ": " << requests << " requests");
    CHECK(requests < 1000);
  }
}
