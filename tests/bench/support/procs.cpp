#include "procs.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace vgpu::bench {

pid_t spawn(const std::vector<std::string>& argv, const std::string& log,
            const std::vector<std::string>& env) {
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    for (const auto& e : env) putenv(strdup(e.c_str()));
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

int wait_exit(pid_t pid, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (r < 0) return -1;
    if (std::chrono::steady_clock::now() > end) {
      kill_group(pid);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void kill_group(pid_t pid) {
  if (pid <= 0) return;
  kill(-pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

TempDir::TempDir(const char* prefix) {
  std::string tmpl = std::string("/tmp/") + prefix + "-XXXXXX";
  if (mkdtemp(tmpl.data())) path_ = tmpl;
}

TempDir::~TempDir() {
  if (!path_.empty() && !std::getenv("VGPU_BENCH_KEEP")) {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {

uint64_t field_after(const std::string& text, const std::string& key) {
  const size_t at = text.find(key);
  if (at == std::string::npos) return 0;
  return std::strtoull(text.c_str() + at + key.size(), nullptr, 10);
}

}  // namespace

std::map<int, CpuSample> cpu_by_thread(pid_t pid) {
  std::map<int, CpuSample> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::string task = dir + "/" + e->d_name;
    CpuSample& s = out[std::atoi(e->d_name)];
    s.cpu_ns = std::strtoull(read_file(task + "/schedstat").c_str(), nullptr, 10);
    const std::string status = read_file(task + "/status");
    s.switches = field_after(status, "\nvoluntary_ctxt_switches:") +
                 field_after(status, "\nnonvoluntary_ctxt_switches:");
    s.threads = 1;
  }
  closedir(d);
  return out;
}

CpuSample cpu_of(pid_t pid) {
  CpuSample total;
  for (const auto& [tid, s] : cpu_by_thread(pid)) {
    total.cpu_ns += s.cpu_ns;
    total.switches += s.switches;
    total.threads += s.threads;
  }
  return total;
}

MemorySample memory_of(pid_t pid) {
  const std::string t = read_file("/proc/" + std::to_string(pid) + "/smaps_rollup");
  MemorySample m;
  m.rss_kib = field_after(t, "\nRss:");
  m.pss_kib = field_after(t, "\nPss:");
  m.pss_shmem_kib = field_after(t, "\nPss_Shmem:");
  m.anon_kib = field_after(t, "\nAnonymous:");
  // Resident shared memory: what is resident and neither anonymous nor a
  // file's page cache is the memfds (regions, arenas); smaps_rollup has no
  // Rss_Shmem, /proc/PID/status has RssShmem.
  const std::string st = read_file("/proc/" + std::to_string(pid) + "/status");
  m.rss_shmem_kib = field_after(st, "\nRssShmem:");
  return m;
}

}  // namespace vgpu::bench
