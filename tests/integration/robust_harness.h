// Helpers for the robustness tests (hostile, back-pressure, kill, restart,
// class): what the daemon's accounting shows (read with quota_harness.h's
// daemon_status), the vgpu-test-vm tool, /proc figures of the daemon, and bystander VMs that keep
// running real programs while something else goes wrong.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness.h"
#include "quota_harness.h"

namespace vgpu::test {

using nlohmann::json;

std::string test_vm_path();

// Whether the entry shows nothing held: no channel, context, allocation,
// memory, stream, event, module, pending or queued work.
bool holds_nothing(const json& tenant);

// Runs vgpu-test-vm MODE with `args` (after the mode) to completion.
RunResult run_test_vm(const std::string& mode, const std::vector<std::string>& args,
                      std::chrono::milliseconds limit = std::chrono::seconds(120));
std::unique_ptr<Process> start_test_vm(const std::string& mode,
                                       const std::vector<std::string>& args,
                                       const std::string& output_file);
// "key value" lines of a vgpu-test-vm report (the first value of each key).
std::map<std::string, std::string> report_of(const std::string& output);
uint64_t report_u64(const std::map<std::string, std::string>& r, const std::string& key);
// What `vgpu-test-vm latency` measured: its calls, the slowest, and how many
// took over 10 ms.
struct CallLatency {
  uint64_t calls = 0;
  double worst_ms = 0;
  uint64_t over_10ms = 0;
};
CallLatency latency_of(const std::string& output);

// /proc figures of a process: CPU time used (user + system), resident memory.
double cpu_seconds(pid_t pid);
uint64_t rss_bytes(pid_t pid);

// Polls `cond` every 20 ms until it holds or `limit` passes.
bool eventually(const std::function<bool()>& cond, std::chrono::milliseconds limit);

// VMs that run real programs in a loop until stop(); every run must PASS.
class Bystanders {
 public:
  using Starter = std::function<std::unique_ptr<Process>(const std::string& vm,
                                                         const std::string& program)>;
  Bystanders(Starter start, std::vector<std::string> vms, std::vector<std::string> programs);
  ~Bystanders();
  void stop();  // lets the current runs finish, then returns
  int runs() const { return runs_; }
  std::vector<std::string> failures() const;
  double slowest_s() const { return slowest_s_; }

 private:
  void loop(size_t i);
  Starter start_;
  std::vector<std::string> vms_, programs_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> runs_{0};
  std::atomic<double> slowest_s_{0};
  mutable std::mutex mu_;
  std::vector<std::string> failures_;
  std::vector<std::thread> threads_;
};

}  // namespace vgpu::test
