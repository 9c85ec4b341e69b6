// Child processes and what /proc says about them: CPU time, wake-ups and
// memory, for the benchmarks that measure the daemon from outside.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace vgpu::bench {

// A child in its own process group with stdout and stderr in `log`, and
// `env` ("NAME=value") added to its environment. Returns its pid (-1 on failure).
pid_t spawn(const std::vector<std::string>& argv, const std::string& log,
            const std::vector<std::string>& env = {});
// Waits up to `limit` for `pid` to exit; kills its group after that. Returns
// the exit status, or -1 if it had to be killed or did not exit normally.
int wait_exit(pid_t pid, std::chrono::milliseconds limit);
// SIGKILL to the child's group, then reaps it.
void kill_group(pid_t pid);

// A fresh directory under /tmp, removed by the destructor unless
// VGPU_BENCH_KEEP is set.
class TempDir {
 public:
  explicit TempDir(const char* prefix);
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// CPU time of every thread of `pid` (run time from /proc/PID/task/*/schedstat,
// in ns), and voluntary plus involuntary context switches (each is one
// wake-up or preemption), summed over its threads.
struct CpuSample {
  uint64_t cpu_ns = 0;
  uint64_t switches = 0;
  int threads = 0;
};
CpuSample cpu_of(pid_t pid);
// The same, per thread (by thread id), for a breakdown of who wakes up.
std::map<int, CpuSample> cpu_by_thread(pid_t pid);

// Memory of `pid` from /proc/PID/smaps_rollup, in KiB: resident, proportional
// (shared pages divided by their users) and the shared-memory part of each.
struct MemorySample {
  uint64_t rss_kib = 0;
  uint64_t pss_kib = 0;
  uint64_t rss_shmem_kib = 0;
  uint64_t pss_shmem_kib = 0;
  uint64_t anon_kib = 0;
};
MemorySample memory_of(pid_t pid);

std::string read_file(const std::string& path);

}  // namespace vgpu::bench
