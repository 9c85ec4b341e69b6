// Integration-test harness: a real vgpud in a temporary runtime directory, and
// programs run through vgpu-run as simulated VMs.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace vgpu::test {

// Paths of what the build produced (set by CMake).
std::string vgpud_path();
std::string vgpu_run_path();
std::string program_path(const std::string& name);
std::string test_kernels_path();
// The backend the tests run on: "sim", or VGPU_TEST_BACKEND (tests/gpu/run.sh sets cuda).
std::string test_backend();
inline bool on_sim() { return test_backend() == "sim"; }

struct RunResult {
  int exit_code = -1;  // -signal if killed by a signal
  std::string output;  // stdout and stderr together
  bool timed_out = false;
};

// A child process with its output captured in a file.
class Process {
 public:
  Process(const std::vector<std::string>& argv, const std::string& output_file,
          const std::vector<std::string>& extra_env = {});
  ~Process();  // kills it if still running
  pid_t pid() const { return pid_; }
  bool running();
  // Waits for exit; kills it after `limit`.
  RunResult wait(std::chrono::milliseconds limit);
  void signal(int sig);
  // What it has printed so far (stdout and stderr).
  std::string output_so_far() const;
  // Waits until its output contains `text`, woken by each write to the
  // output file (inotify), not by a clock. False if it exits first or
  // `limit` passes.
  bool wait_for_output(const std::string& text, std::chrono::milliseconds limit);

 private:
  pid_t pid_ = -1;
  std::string output_file_;
  int status_ = 0;
  bool reaped_ = false;
};

class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Which CPU kernel implementations a sim vgpud loads.
enum class Plugins {
  kTestKernels,  // the test programs' plug-in (--sim-kernels)
  kNone,         // none: every kernel runs from its PTX (the interpreter) or fails
};

class Daemon {
 public:
  // Starts vgpud (test_backend(), the test kernels plug-in) and waits for its socket.
  explicit Daemon(std::vector<std::string> extra_args = {}, Plugins plugins = Plugins::kTestKernels);
  ~Daemon();
  const std::string& runtime_dir() const { return dir_.path(); }
  std::string db_path() const { return dir_.path() + "/vgpu.db"; }
  std::string log() const;
  // Waits until its log holds `text` (woken by each write to it).
  bool wait_for_log(const std::string& text, std::chrono::milliseconds limit) {
    return proc_ && proc_->wait_for_output(text, limit);
  }
  void kill9();
  RunResult stop();  // SIGTERM and wait
  pid_t pid() const { return proc_ ? proc_->pid() : -1; }

  // Starts a program as simulated VM `vm`.
  std::unique_ptr<Process> start(const std::string& vm, const std::string& program,
                                 const std::vector<std::string>& args = {});
  // The same through vgpu's runtime shim (vgpu-run --runtime shim).
  std::unique_ptr<Process> start_shim(const std::string& vm, const std::string& program,
                                      const std::vector<std::string>& args = {});
  // Runs it to completion.
  RunResult run(const std::string& vm, const std::string& program,
                const std::vector<std::string>& args = {},
                std::chrono::milliseconds limit = std::chrono::seconds(120));

 private:
  std::unique_ptr<Process> launch(const std::vector<std::string>& run_flags,
                                  const std::string& program, const std::vector<std::string>& args);

  TempDir dir_;
  std::unique_ptr<Process> proc_;
  int next_output_ = 0;
};

std::string read_file(const std::string& path);

}  // namespace vgpu::test
