// vgpu-run: runs a program as a simulated VM. It points the program's CUDA
// runtime at vgpu's (libcudart.so.13 from ../lib/vgpu), tells it which daemon
// and which VM name to use, and execs it.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "../common/runtime_dir.h"
#include "elf_inspect.h"
#include "vgpu/protocol/handover.h"

namespace fs = std::filesystem;

namespace {

// The program as execvp would find it.
std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = dirs.find(':', start);
    const std::string dir = dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return name;
}

// vgpu's runtime library: $VGPU_LIBDIR, else ../lib/vgpu next to this executable.
std::string library_dir() {
  if (const char* d = std::getenv("VGPU_LIBDIR"); d && *d) return d;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return (self.parent_path().parent_path() / "lib" / "vgpu").string();
}

void prepend_env(const char* name, const std::string& value) {
  const char* old = std::getenv(name);
  const std::string v = old && *old ? value + ":" + old : value;
  setenv(name, v.c_str(), 1);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vgpu-run: run a CUDA program as a simulated VM of vgpud"};
  std::string vm, runtime_dir;
  std::vector<std::string> command;
  app.add_option("--vm", vm, "the VM name this program runs as (its tenant)")->required();
  app.add_option("--runtime-dir", runtime_dir,
                 "vgpud's runtime directory (default: $VGPU_RUNTIME_DIR, else " +
                     vgpu::cli::default_runtime_dir() + ")");
  app.add_option("command", command, "PROGRAM [ARGS...]")->required();
  app.positionals_at_end();
  CLI11_PARSE(app, argc, argv);

  const std::string dir = vgpu::cli::resolve_runtime_dir(runtime_dir);
  const std::string program = find_program(command[0]);

  vgpu::cli::ProgramInfo info;
  std::string why;
  if (!vgpu::cli::inspect_program(program, &info, &why)) {
    std::fprintf(stderr, "vgpu-run: %s\n", why.c_str());
    return 127;
  }
  if (!info.needs_shared_cudart() && info.has_fatbin) {
    std::fprintf(stderr,
                 "vgpu-run: %s links the CUDA runtime statically (nvcc's default), so vgpu "
                 "cannot forward its calls.\nRebuild it with the shared runtime: "
                 "`nvcc -cudart shared ...` (CMake: set_target_properties(TARGET PROPERTIES "
                 "CUDA_RUNTIME_LIBRARY Shared)).\n",
                 program.c_str());
    return 2;
  }
  if (!info.needs_shared_cudart()) {
    std::fprintf(stderr, "vgpu-run: note: %s does not use the CUDA runtime\n", program.c_str());
  }
  const std::string socket = dir + "/" + VGPU_SOCKET_NAME;
  if (!fs::exists(socket)) {
    std::fprintf(stderr,
                 "vgpu-run: vgpud is not running at %s (no %s); start it with "
                 "`vgpud --runtime-dir %s`\n",
                 dir.c_str(), socket.c_str(), dir.c_str());
    return 2;
  }
  const std::string lib = library_dir();
  if (!fs::exists(fs::path(lib) / "libcudart.so.13")) {
    std::fprintf(stderr, "vgpu-run: vgpu's libcudart.so.13 is not in %s (set VGPU_LIBDIR)\n",
                 lib.c_str());
    return 2;
  }

  setenv("VGPU_RUNTIME_DIR", dir.c_str(), 1);
  setenv("VGPU_VM", vm.c_str(), 1);
  prepend_env("LD_LIBRARY_PATH", lib);
  // Preloading by SONAME wins over a program's RPATH pointing at the real runtime.
  std::string preload = lib + "/libcudart.so.13";
#ifdef VGPU_ASAN_RUNTIME
  // A sanitized build of the library needs the sanitizer runtime loaded first.
  preload = std::string(VGPU_ASAN_RUNTIME) + ":" + preload;
#endif
  prepend_env("LD_PRELOAD", preload);

  std::vector<char*> args;
  for (auto& a : command) args.push_back(a.data());
  args.push_back(nullptr);
  execv(program.c_str(), args.data());
  std::perror(("vgpu-run: " + program).c_str());
  return 127;
}
