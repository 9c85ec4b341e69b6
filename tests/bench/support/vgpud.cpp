#include "vgpud.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <thread>

namespace vgpu::bench {

std::string bench_program(const std::string& name) {
  return std::string(VGPU_BENCH_PROGRAMS_DIR) + "/" + name;
}

Vgpud::Vgpud(const std::vector<std::string>& extra_args) {
  if (dir_.path().empty()) return;
  const char* level = std::getenv("VGPU_BENCH_LOG");
  std::vector<std::string> argv = {VGPU_BENCH_VGPUD, "--runtime-dir", dir_.path(),
                                   "--db", dir_.path() + "/vgpu.db", "--log-level",
                                   level ? level : "warn", "--libvirt", "none"};
  // The sim backend with the benchmark kernels, unless the caller names another.
  if (std::find(extra_args.begin(), extra_args.end(), "--backend") == extra_args.end()) {
    argv.insert(argv.end(), {"--backend", "sim", "--sim-kernels", VGPU_BENCH_KERNELS});
  }
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  pid_ = spawn(argv, log_path());
  for (int i = 0; i < 400; ++i) {
    if (std::filesystem::exists(socket())) {
      ok_ = true;
      return;
    }
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  std::fprintf(stderr, "vgpud did not start:\n%s\n", read_file(log_path()).c_str());
}

Vgpud::~Vgpud() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  if (wait_exit(pid_, std::chrono::seconds(20)) < 0) kill_group(pid_);
}

pid_t Vgpud::start(const std::string& vm, const std::string& program,
                   const std::vector<std::string>& args, const std::string& runtime) {
  std::vector<std::string> argv = {VGPU_BENCH_VGPU_RUN, "--runtime-dir", dir_.path(), "--vm", vm};
  if (!runtime.empty()) argv.insert(argv.end(), {"--runtime", runtime});
  argv.insert(argv.end(), {"--", program});
  argv.insert(argv.end(), args.begin(), args.end());
  return spawn(argv, dir_.path() + "/" + vm + ".log");
}

std::string Vgpud::output_of(const std::string& vm) const {
  return read_file(dir_.path() + "/" + vm + ".log");
}

std::map<std::string, double> Vgpud::run(const std::string& vm, const std::string& program,
                                         const std::vector<std::string>& args, int limit_s,
                                         const std::string& runtime) {
  const pid_t p = start(vm, program, args, runtime);
  const int status = wait_exit(p, std::chrono::seconds(limit_s));
  const std::string out = output_of(vm);
  if (status != 0) {
    std::fprintf(stderr, "%s (vm %s) failed (status %d):\n%s\n", program.c_str(), vm.c_str(),
                 status, out.c_str());
    return {};
  }
  return parse_results(out);
}

std::map<std::string, double> parse_results(const std::string& output) {
  std::map<std::string, double> out;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("result ", 0) != 0) continue;
    std::istringstream fields(line.substr(7));
    std::string name;
    double value = 0;
    if (fields >> name >> value) out[name] = value;
  }
  return out;
}

}  // namespace vgpu::bench
