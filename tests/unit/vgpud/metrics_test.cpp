// vgpud's Prometheus metrics (metrics.h, metrics_server.h): what the text
// says for given views, that Prometheus's own checker accepts it, and the
// listen address.
#include "metrics.h"

#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "metrics_server.h"
#include "vgpu/host/call_latency.h"

using nlohmann::json;
using vgpu::daemon::parse_listen_address;
using vgpu::daemon::prometheus_text;

namespace {

json status_view() {
  json lab1 = {{"vm", "lab-1"}, {"channels", 2},    {"bytes", 2048},      {"queued", 5},
               {"malformed", 0}, {"refused", 3},    {"work_failed", 1},   {"backpressure", 0}};
  json odd = {{"vm", "odd\"vm"}, {"channels", 1},   {"bytes", 1024},      {"queued", 0},
              {"malformed", 7},   {"refused", 0},    {"work_failed", 0},   {"backpressure", 2}};
  json s = {{"uptime_s", 12.5}, {"gpu_ns", 4500000000ull}};
  s["backend"] = {{"name", "sim"}, {"contexts", 2}, {"device_bytes", 3072}};
  s["transport"] = {{"channels", 3}, {"requests", 900}, {"corrupt_rings", 1}};
  s["gpus"] = json::array(
      {{{"index", 0}, {"gpu_ns", 4000000000ull}, {"device_bytes", 2048},
        {"memory_total", 536870912}, {"vms", 1}, {"committed_weight", 3.0}},
       {{"index", 1}, {"gpu_ns", 500000000ull}, {"device_bytes", 1024},
        {"memory_total", 536870912}, {"vms", 1}, {"committed_weight", 1.0}}});
  s["tenants"] = json::array({lab1, odd});
  return s;
}

json top_view() {
  json lab1 = {{"vm", "lab-1"},  {"student", "alice"},        {"course", "gpu101"},
               {"gpu_ns", 1500000000}, {"kernels", 42},       {"queued", 5},
               {"limited", true}, {"left_ns", 600000000000},  {"memory_cap", 4096}};
  json odd = {{"vm", "odd\"vm"}, {"student", ""},  {"course", ""},    {"gpu_ns", 0},
              {"kernels", 0},      {"queued", 0},   {"limited", false}, {"left_ns", -1},
              {"memory_cap", 0}};
  return {{"tenants", json::array({lab1, odd})}};
}

json usage_view() {
  json lab1 = {{"vm", "lab-1"}, {"student", "alice"}, {"course", "gpu101"},
               {"gpu_ns", 1500000000}, {"kernels", 42}};
  // Gone: no longer in `status` or `top`, still counted.
  json gone = {{"vm", "lab-2"}, {"student", "bob"}, {"course", "gpu101"},
               {"gpu_ns", 3000000000u}, {"kernels", 7}};
  return {{"vms", json::array({lab1, gone})}};
}

// lab-1's immediate calls: 3 under 10 µs, 1 under 25 µs, 1 under 1 ms, 1 past
// 10 s (the +Inf bucket); its queued work: 2 under 5 ms.
json latency_view() {
  const uint64_t kBuckets = vgpu::host::kLatencyBounds.size() + 1;
  json immediate = json::array(), queued = json::array();
  for (uint64_t i = 0; i < kBuckets; ++i) {
    immediate.push_back(i == 0 ? 3 : i == 1 || i == 6 || i == kBuckets - 1 ? 1 : 0);
    queued.push_back(i == 8 ? 2 : 0);
  }
  json a = {{"vm", "lab-1"}, {"student", "alice"}, {"course", "gpu101"}, {"kind", "immediate"},
            {"counts", immediate}, {"count", 6}, {"sum_ns", 20000000000ull}};
  json b = {{"vm", "lab-1"}, {"student", "alice"}, {"course", "gpu101"}, {"kind", "queued"},
            {"counts", queued}, {"count", 2}, {"sum_ns", 8000000}};
  return json::array({a, b});
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

}  // namespace

TEST_CASE("metrics: each VM's series carry its student and course", "[metrics]") {
  const std::string t = prometheus_text(status_view(), top_view(), usage_view(), latency_view(), 1ull << 30);
  INFO(t);
  const std::string alice = "vm=\"lab-1\",student=\"alice\",course=\"gpu101\"";
  CHECK(has_line(t, "vgpu_vm_gpu_seconds_total{" + alice + "} 1.5"));
  CHECK(has_line(t, "vgpu_vm_kernels_total{" + alice + "} 42"));
  // A VM whose program ended keeps its GPU time under its student.
  const std::string bob = "vm=\"lab-2\",student=\"bob\",course=\"gpu101\"";
  CHECK(has_line(t, "vgpu_vm_gpu_seconds_total{" + bob + "} 3"));
  CHECK(t.find("vgpu_vm_queue_depth{" + bob) == std::string::npos);
  CHECK(has_line(t, "vgpu_vm_queue_depth{" + alice + "} 5"));
  CHECK(has_line(t, "vgpu_vm_memory_bytes{" + alice + "} 2048"));
  CHECK(has_line(t, "vgpu_vm_memory_cap_bytes{" + alice + "} 4096"));
  CHECK(has_line(t, "vgpu_vm_budget_remaining_seconds{" + alice + "} 600"));
  CHECK(has_line(t, "vgpu_vm_budget_spent{" + alice + "} 0"));
  CHECK(has_line(t, "vgpu_vm_refusals_total{" + alice + ",reason=\"refused\"} 3"));
  CHECK(has_line(t, "vgpu_vm_refusals_total{" + alice + ",reason=\"work_failed\"} 1"));
  // Label values are escaped; an unlimited budget and no cap have no series.
  const std::string odd = "vm=\"odd\\\"vm\",student=\"\",course=\"\"";
  CHECK(has_line(t, "vgpu_vm_refusals_total{" + odd + ",reason=\"malformed\"} 7"));
  CHECK(t.find("vgpu_vm_budget_remaining_seconds{" + odd) == std::string::npos);
  CHECK(t.find("vgpu_vm_memory_cap_bytes{" + odd) == std::string::npos);
  // The device and the daemon.
  CHECK(has_line(t, "vgpu_gpu_busy_seconds_total 4.5"));
  CHECK(has_line(t, "vgpu_gpu_memory_used_bytes 3072"));
  CHECK(has_line(t, "vgpu_gpu_memory_total_bytes 1073741824"));
  CHECK(has_line(t, "vgpu_corrupt_rings_total 1"));
  // Each GPU, labelled by its index.
  CHECK(has_line(t, "vgpu_gpu_device_busy_seconds_total{gpu=\"0\"} 4"));
  CHECK(has_line(t, "vgpu_gpu_device_busy_seconds_total{gpu=\"1\"} 0.5"));
  CHECK(has_line(t, "vgpu_gpu_device_memory_used_bytes{gpu=\"1\"} 1024"));
  CHECK(has_line(t, "vgpu_gpu_device_memory_total_bytes{gpu=\"0\"} 536870912"));
  CHECK(has_line(t, "vgpu_gpu_device_vms{gpu=\"0\"} 1"));
  CHECK(has_line(t, "vgpu_gpu_device_committed_weight{gpu=\"0\"} 3"));
  CHECK(has_line(t, "# TYPE vgpu_vm_gpu_seconds_total counter"));
  CHECK(has_line(t, "# TYPE vgpu_vm_queue_depth gauge"));
}

TEST_CASE("metrics: call latency is a histogram with cumulative buckets", "[metrics]") {
  const std::string t = prometheus_text(status_view(), top_view(), usage_view(), latency_view(), 0);
  INFO(t);
  const std::string imm = "vm=\"lab-1\",student=\"alice\",course=\"gpu101\",kind=\"immediate\"";
  const std::string q = "vm=\"lab-1\",student=\"alice\",course=\"gpu101\",kind=\"queued\"";
  CHECK(has_line(t, "# TYPE vgpu_vm_call_duration_seconds histogram"));
  CHECK(has_line(t, "vgpu_vm_call_duration_seconds_bucket{" + imm + ",le=\"1e-05\"} 3"));
  CHECK(has_line(t, "vgpu_vm_call_duration_seconds_bucket{" + imm + ",le=\"2.5e-05\"} 4"));
  CHECK(has_line(t, "vgpu_vm_call_duration_seconds_bucket{" + imm + ",le=\"0.001\"} 5"));
  CHECK(has_line(t, "vgpu_vm_call_duration_seconds_bucket{" + imm + ",le=\"10\"} 5"));
  CHECK(has_line(t, "vgpu_vm_call_duration_seconds_bucket{" + imm + ",le=\"+Inf\"} 6"));
  CHECK(has_line(t, "vgpu_vm_call_duration_seconds_sum{" + imm + "} 20"));
  CHECK(has_line(t, "vgpu_vm_call_duration_seconds_count{" + imm + "} 6"));
  CHECK(has_line(t, "vgpu_vm_call_duration_seconds_bucket{" + q + ",le=\"0.0025\"} 0"));
  CHECK(has_line(t, "vgpu_vm_call_duration_seconds_bucket{" + q + ",le=\"0.005\"} 2"));
  CHECK(has_line(t, "vgpu_vm_call_duration_seconds_count{" + q + "} 2"));
}

TEST_CASE("call latency: each call lands in the first bucket at or above it", "[metrics]") {
  vgpu::host::CallLatency l;
  using vgpu::host::CallKind;
  l.record(7, CallKind::kImmediate, 9'000);        // 9 µs: le 10 µs
  l.record(7, CallKind::kImmediate, 10'000);       // exactly 10 µs: le 10 µs
  l.record(7, CallKind::kImmediate, 10'001);       // le 25 µs
  l.record(7, CallKind::kQueued, 3'000'000);       // 3 ms: le 5 ms
  l.record(7, CallKind::kQueued, 60'000'000'000);  // a minute: +Inf
  l.record(8, CallKind::kQueued, 1'000);
  const auto snap = l.snapshot();
  REQUIRE(snap.size() == 2);
  const auto& imm = snap.at(7)[0];
  const auto& q = snap.at(7)[1];
  CHECK(imm.counts[0] == 2);
  CHECK(imm.counts[1] == 1);
  CHECK(imm.count == 3);
  CHECK(imm.sum_ns == 29'001);
  CHECK(q.counts[8] == 1);
  CHECK(q.counts.back() == 1);
  CHECK(q.count == 2);
  CHECK(snap.at(8)[0].count == 0);
  CHECK(snap.at(8)[1].counts[0] == 1);
}

TEST_CASE("metrics: a spent budget shows as spent with nothing left", "[metrics]") {
  json top = top_view();
  top["tenants"][0]["left_ns"] = 0;
  const std::string t = prometheus_text(status_view(), top, usage_view(), latency_view(), 0);
  CHECK(has_line(t, "vgpu_vm_budget_spent{vm=\"lab-1\",student=\"alice\",course=\"gpu101\"} 1"));
  CHECK(has_line(t,
                 "vgpu_vm_budget_remaining_seconds{vm=\"lab-1\",student=\"alice\",course=\"gpu101\"} 0"));
}

TEST_CASE("metrics: Prometheus's own checker accepts the text", "[metrics]") {
  REQUIRE(std::system("command -v promtool >/dev/null") == 0);  // scripts/install-deps.sh
  const std::string path = "/tmp/vgpu-metrics-test-" + std::to_string(getpid()) + ".txt";
  std::ofstream(path) << prometheus_text(status_view(), top_view(), usage_view(), latency_view(), 1ull << 30);
  // promtool reads the exposition on stdin; lint problems (names, units,
  // HELP text) fail it too.
  const int rc = std::system(("promtool check metrics < " + path + " > " + path + ".out 2>&1").c_str());
  std::ifstream out(path + ".out");
  const std::string said((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
  INFO(said);
  CHECK(WIFEXITED(rc));
  CHECK(WEXITSTATUS(rc) == 0);
  std::remove(path.c_str());
  std::remove((path + ".out").c_str());
}

TEST_CASE("metrics: listen addresses", "[metrics]") {
  std::string host;
  int port = -1;
  REQUIRE(parse_listen_address("127.0.0.1:9400", &host, &port).ok());
  CHECK(host == "127.0.0.1");
  CHECK(port == 9400);
  REQUIRE(parse_listen_address("[::1]:0", &host, &port).ok());
  CHECK(host == "::1");
  CHECK(port == 0);
  REQUIRE(parse_listen_address(":9400", &host, &port).ok());
  CHECK(host == "0.0.0.0");
  for (const char* bad : {"9400", "host:", "host:65536", "host:-1", "host:12ab", "a b:1", "/x:1"}) {
    INFO(bad);
    const vgpu::Result r = parse_listen_address(bad, &host, &port);
    CHECK(r.is(vgpu::Result::Code::kInvalidArgument));
    CHECK_THAT(r.message(), Catch::Contains("--metrics-listen"));
  }
}

TEST_CASE("metrics server: an address in use is refused with a reason", "[metrics]") {
  vgpu::daemon::MetricsServer first, second;
  REQUIRE(first.start("127.0.0.1:0", [] { return std::string("x 1\n"); }).ok());
  REQUIRE(first.port() > 0);
  const vgpu::Result r =
      second.start("127.0.0.1:" + std::to_string(first.port()), [] { return std::string(); });
  CHECK(r.is(vgpu::Result::Code::kUnavailable));
  CHECK_THAT(r.message(), Catch::Contains("cannot listen"));
  first.stop();
}
