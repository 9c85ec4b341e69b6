#include "robust_harness.h"

#include <unistd.h>

#include <cctype>
#include <fstream>
#include <sstream>

#include "quota_harness.h"

namespace vgpu::test {

using namespace std::chrono_literals;

std::string test_vm_path() { return VGPU_TEST_VM; }

bool holds_nothing(const json& t) {
  for (const char* key : {"channels", "contexts", "allocations", "bytes", "streams", "events",
                          "modules", "pending", "queued"}) {
    if (t.contains(key) && t[key].get<uint64_t>() != 0) return false;
  }
  return true;
}

std::unique_ptr<Process> start_test_vm(const std::string& mode,
                                       const std::vector<std::string>& args,
                                       const std::string& output_file) {
  std::vector<std::string> argv = {test_vm_path(), mode};
  argv.insert(argv.end(), args.begin(), args.end());
  return std::make_unique<Process>(argv, output_file);
}

RunResult run_test_vm(const std::string& mode, const std::vector<std::string>& args,
                      std::chrono::milliseconds limit) {
  char tmpl[] = "/tmp/vgpu-testvm-XXXXXX";
  const int fd = mkstemp(tmpl);
  close(fd);
  RunResult r = start_test_vm(mode, args, tmpl)->wait(limit);
  unlink(tmpl);
  return r;
}

std::map<std::string, std::string> report_of(const std::string& output) {
  std::map<std::string, std::string> r;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    const size_t space = line.find(' ');
    if (space == std::string::npos) continue;
    r.emplace(line.substr(0, space), line.substr(space + 1));
  }
  return r;
}

uint64_t report_u64(const std::map<std::string, std::string>& r, const std::string& key) {
  auto it = r.find(key);
  return it == r.end() ? 0 : std::strtoull(it->second.c_str(), nullptr, 10);
}

CallLatency latency_of(const std::string& output) {
  const auto r = report_of(output);
  return {report_u64(r, "calls"), static_cast<double>(report_u64(r, "worst_us")) / 1000.0,
          report_u64(r, "over_10ms")};
}

double cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  // Fields after the command name (which may hold spaces): state is field 3,
  // utime and stime fields 14 and 15.
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i >= 14) ticks += std::stod(field);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

uint64_t rss_bytes(pid_t pid) {
  // AddressSanitizer's shadow (x86-64: one byte per eight of the address
  // space, at [0x7fff8000, 0x10007fff8000)) keeps a page resident for every
  // eighth page the process ever mapped there, and never gives it back: on a
  // host whose kernel places each new mapping (a thread's stack, a VM's
  // region) at a new address it grows with every VM served, and reads as a
  // leak. It is the sanitizer's, not the daemon's, and absent from a Release
  // build: count every other mapping.
  constexpr uint64_t kShadowBegin = 0x7fff8000ull, kShadowEnd = 0x10007fff8000ull;
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps");
  std::string line;
  uint64_t total = 0;
  bool shadow = false;
  while (std::getline(in, line)) {
    if (line.rfind("Rss:", 0) == 0) {
      if (!shadow) total += std::stoull(line.substr(4)) * 1024;
      continue;
    }
    // A mapping's first line: "start-end perms offset dev inode [path]".
    const size_t dash = line.find('-');
    if (dash == std::string::npos || dash == 0 || !std::isxdigit(static_cast<unsigned char>(line[0])))
      continue;
    const uint64_t start = std::stoull(line.substr(0, dash), nullptr, 16);
    shadow = start >= kShadowBegin && start < kShadowEnd;
  }
  return total;
}

bool eventually(const std::function<bool()>& cond, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (cond()) return true;
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(20ms);
  }
}

Bystanders::Bystanders(Starter start, std::vector<std::string> vms,
                       std::vector<std::string> programs)
    : start_(std::move(start)), vms_(std::move(vms)), programs_(std::move(programs)) {
  for (size_t i = 0; i < vms_.size(); ++i) threads_.emplace_back([this, i] { loop(i); });
}

Bystanders::~Bystanders() { stop(); }

void Bystanders::stop() {
  stopping_ = true;
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

std::vector<std::string> Bystanders::failures() const {
  std::lock_guard lock(mu_);
  return failures_;
}

void Bystanders::loop(size_t i) {
  for (size_t n = i; !stopping_; ++n) {
    const std::string program = programs_[n % programs_.size()];
    const auto t0 = std::chrono::steady_clock::now();
    std::unique_ptr<Process> p;
    {
      std::lock_guard lock(mu_);  // starters (Daemon::start) are not thread-safe
      p = start_(vms_[i], program);
    }
    const RunResult r = p->wait(180s);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    runs_++;
    if (s > slowest_s_) slowest_s_ = s;
    if (r.exit_code != 0 || r.output.find("PASS " + program) == std::string::npos) {
      std::lock_guard lock(mu_);
      failures_.push_back(vms_[i] + " " + program + " (exit " + std::to_string(r.exit_code) +
                          "): " + r.output.substr(r.output.size() > 600 ? r.output.size() - 600 : 0));
    }
  }
}

}  // namespace vgpu::test
