#include "harness.h"

#include <signal.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

namespace vgpu::test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string vgpud_path() { return VGPU_TEST_VGPUD; }
std::string vgpu_run_path() { return VGPU_TEST_VGPU_RUN; }
// A test program by name, or any program by absolute path (vgpu-smi).
std::string program_path(const std::string& name) {
  return name.starts_with('/') ? name : std::string(VGPU_TEST_PROGRAMS_DIR) + "/" + name;
}
std::string test_kernels_path() { return VGPU_TEST_KERNELS; }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Process::Process(const std::vector<std::string>& argv, const std::string& output_file,
                 const std::vector<std::string>& extra_env)
    : output_file_(output_file) {
  pid_ = fork();
  if (pid_ == 0) {
    setpgid(0, 0);  // its own group, so a kill reaches its children too
    const int fd = open(output_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    for (const auto& e : extra_env) putenv(strdup(e.c_str()));
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
}

Process::~Process() {
  if (pid_ > 0 && !reaped_) {
    ::kill(-pid_, SIGKILL);
    waitpid(pid_, &status_, 0);
  }
}

bool Process::running() {
  if (reaped_) return false;
  if (waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
  return !reaped_;
}

bool Process::wait_for_output(const std::string& text, std::chrono::milliseconds limit) {
  const int fd = inotify_init1(IN_CLOEXEC);
  if (fd < 0) return false;
  inotify_add_watch(fd, output_file_.c_str(), IN_MODIFY | IN_CLOSE_WRITE);
  const auto end = std::chrono::steady_clock::now() + limit;
  bool found = false;
  for (;;) {
    // Checked after the watch is in place, so no write is missed.
    if (output_so_far().find(text) != std::string::npos) {
      found = true;
      break;
    }
    if (!running()) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    // A bounded wait, so an exit without a final write is still seen.
    if (poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000))) > 0) {
      char events[4096];
      (void)read(fd, events, sizeof events);
    }
  }
  close(fd);
  return found;
}

void Process::signal(int sig) {
  if (!reaped_) ::kill(pid_, sig);
}

RunResult Process::wait(std::chrono::milliseconds limit) {
  RunResult r;
  const auto end = std::chrono::steady_clock::now() + limit;
  while (running()) {
    if (std::chrono::steady_clock::now() > end) {
      r.timed_out = true;
      ::kill(-pid_, SIGKILL);
      waitpid(pid_, &status_, 0);
      reaped_ = true;
      break;
    }
    std::this_thread::sleep_for(2ms);
  }
  if (WIFEXITED(status_)) r.exit_code = WEXITSTATUS(status_);
  if (WIFSIGNALED(status_)) r.exit_code = -WTERMSIG(status_);
  r.output = read_file(output_file_);
  return r;
}

TempDir::TempDir() {
  char tmpl[] = "/tmp/vgpu-it-XXXXXX";
  path_ = mkdtemp(tmpl);
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!std::getenv("VGPU_TEST_KEEP")) fs::remove_all(path_, ec);
}

std::string test_backend() {
  // VGPU_TEST_BACKEND=cuda runs the same tests on a GPU (tests/gpu/run.sh).
  const char* backend = std::getenv("VGPU_TEST_BACKEND");
  return backend && *backend ? backend : "sim";
}

Daemon::Daemon(std::vector<std::string> extra_args, Plugins plugins) {
  std::vector<std::string> argv = {vgpud_path(), "--backend", test_backend(), "--runtime-dir",
                                   dir_.path(),  "--db",      db_path(),
                                   "--libvirt",  "none"};  // tests leave the host's libvirt alone
  if (plugins == Plugins::kTestKernels) {
    argv.insert(argv.end(), {"--sim-kernels", test_kernels_path()});
  }
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  proc_ = std::make_unique<Process>(argv, dir_.path() + "/vgpud.log");
  const auto end = std::chrono::steady_clock::now() + 20s;
  while (!fs::exists(dir_.path() + "/vgpud.sock") && proc_->running() &&
         std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(5ms);
  }
}

Daemon::~Daemon() {
  if (proc_ && proc_->running()) stop();
}

std::string Daemon::log() const { return read_file(dir_.path() + "/vgpud.log"); }

std::string Process::output_so_far() const { return read_file(output_file_); }

void Daemon::kill9() {
  proc_->signal(SIGKILL);
  proc_->wait(10s);
}

RunResult Daemon::stop() {
  proc_->signal(SIGTERM);
  return proc_->wait(30s);
}

std::unique_ptr<Process> Daemon::start(const std::string& vm, const std::string& program,
                                       const std::vector<std::string>& args) {
  return launch({"--vm", vm}, program, args);
}

std::unique_ptr<Process> Daemon::start_shim(const std::string& vm, const std::string& program,
                                            const std::vector<std::string>& args) {
  return launch({"--vm", vm, "--runtime", "shim"}, program, args);
}

std::unique_ptr<Process> Daemon::launch(const std::vector<std::string>& run_flags,
                                        const std::string& program,
                                        const std::vector<std::string>& args) {
  std::vector<std::string> argv = {vgpu_run_path(), "--runtime-dir", dir_.path()};
  argv.insert(argv.end(), run_flags.begin(), run_flags.end());
  argv.push_back("--");
  argv.push_back(program_path(program));
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string out = dir_.path() + "/out-" + std::to_string(next_output_++) + ".txt";
  return std::make_unique<Process>(argv, out);
}

RunResult Daemon::run(const std::string& vm, const std::string& program,
                      const std::vector<std::string>& args, std::chrono::milliseconds limit) {
  return start(vm, program, args)->wait(limit);
}

}  // namespace vgpu::test
