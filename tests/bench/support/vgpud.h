// A vgpud for a benchmark: the sim backend (unless the arguments name
// another) in a temporary runtime directory, with the benchmark's own kernel
// plug-in, and programs run as simulated VMs
// through vgpu-run. Paths come from the build (compile definitions).
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "procs.h"

namespace vgpu::bench {

std::string bench_program(const std::string& name);  // tests/bench/programs, built with nvcc

class Vgpud {
 public:
  // Starts vgpud and waits for its hand-over socket; ok() says whether it came up.
  explicit Vgpud(const std::vector<std::string>& extra_args = {});
  ~Vgpud();
  bool ok() const { return ok_; }
  pid_t pid() const { return pid_; }
  const std::string& runtime_dir() const { return dir_.path(); }
  std::string socket() const { return dir_.path() + "/vgpud.sock"; }
  std::string log_path() const { return dir_.path() + "/vgpud.log"; }

  // Starts `program args...` as simulated VM `vm`; output goes to a log file
  // in the runtime directory, named after the VM. `runtime`: vgpu-run's
  // --runtime (empty: its default, NVIDIA's runtime over vgpu's driver).
  pid_t start(const std::string& vm, const std::string& program,
              const std::vector<std::string>& args, const std::string& runtime = "");
  std::string output_of(const std::string& vm) const;

  // Runs it to completion; the `result NAME VALUE` lines it printed, by NAME.
  // Empty (and the output on stderr) if it failed.
  std::map<std::string, double> run(const std::string& vm, const std::string& program,
                                    const std::vector<std::string>& args, int limit_s = 600,
                                    const std::string& runtime = "");

 private:
  TempDir dir_{"vgpu-bench"};
  pid_t pid_ = -1;
  bool ok_ = false;
};

// `result NAME VALUE` lines of a program's output.
std::map<std::string, double> parse_results(const std::string& output);

}  // namespace vgpu::bench
