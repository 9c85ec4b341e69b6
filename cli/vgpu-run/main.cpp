// vgpu-run: runs a program as a simulated VM. It puts vgpu's guest driver
// (libcuda.so.1 and libnvidia-ml.so.1 from ../lib/vgpu) under the program, so
// NVIDIA's own runtime, static or shared, and the CUDA libraries run on it
// unmodified; tells it which daemon and which VM name to use, and execs it.
// `--runtime shim` instead puts vgpu's older runtime-API replacement
// (../lib/vgpu/shim/libcudart.so.13) in place of a shared runtime.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "../common/runtime_dir.h"
#include "../common/version.h"
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

// vgpu's guest libraries: $VGPU_LIBDIR, else ../lib/vgpu next to this executable.
std::string library_dir() {
  if (const char* d = std::getenv("VGPU_LIBDIR"); d && *d) return d;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return (self.parent_path().parent_path() / "lib" / "vgpu").string();
}

// Where NVIDIA's shared runtime is: $VGPU_CUDA_LIBDIR, else the toolkit's
// lib64 when there is one; empty when neither (the system's path then serves).
std::string cuda_library_dir() {
  if (const char* d = std::getenv("VGPU_CUDA_LIBDIR"); d && *d) return d;
  const char* home = std::getenv("CUDA_HOME");
  const fs::path lib = fs::path(home && *home ? home : "/usr/local/cuda") / "lib64";
  return fs::exists(lib / "libcudart.so.13") ? lib.string() : "";
}

void prepend_env(const char* name, const std::string& value) {
  const char* old = std::getenv(name);
  const std::string v = old && *old ? value + ":" + old : value;
  setenv(name, v.c_str(), 1);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vgpu-run: run a CUDA program as a simulated VM of vgpud"};
  app.set_version_flag("--version", vgpu::cli::version_line("vgpu-run"));
  std::string vm, runtime_dir, runtime = "nvidia";
  std::vector<std::string> command;
  app.add_option("--vm", vm, "the VM name this program runs as (its tenant)")->required();
  app.add_option("--runtime-dir", runtime_dir,
                 "vgpud's runtime directory (default: $VGPU_RUNTIME_DIR, else " +
                     vgpu::cli::default_runtime_dir() + ")");
  app.add_option("--runtime", runtime,
                 "nvidia: the program's own CUDA runtime over vgpu's driver (default); "
                 "shim: vgpu's runtime-API replacement (shared-runtime programs only)")
      ->check(CLI::IsMember({"nvidia", "shim"}));
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
  const bool shim = runtime == "shim";
  if (shim && !info.needs_shared_cudart() && info.has_fatbin) {
    std::fprintf(stderr,
                 "vgpu-run: %s links the CUDA runtime statically (nvcc's default), which the "
                 "shim cannot replace; run it without --runtime shim\n",
                 program.c_str());
    return 2;
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
  const std::string preloaded = shim ? lib + "/shim/libcudart.so.13" : lib + "/libcuda.so.1";
  if (!fs::exists(preloaded)) {
    std::fprintf(stderr, "vgpu-run: %s is missing (set VGPU_LIBDIR to vgpu's lib/vgpu)\n",
                 preloaded.c_str());
    return 2;
  }

  setenv("VGPU_RUNTIME_DIR", dir.c_str(), 1);
  setenv("VGPU_VM", vm.c_str(), 1);
  // NVIDIA's shared runtime, when the program uses it, from the toolkit (a
  // guest has it on its own library path).
  if (!shim) {
    if (const std::string cuda = cuda_library_dir(); !cuda.empty()) prepend_env("LD_LIBRARY_PATH", cuda);
  }
  prepend_env("LD_LIBRARY_PATH", lib);
  // Preloading by SONAME wins over a RUNPATH or a system copy of the real
  // library: the runtime's dlopen("libcuda.so.1") finds ours already loaded.
  std::string preload = preloaded;
#ifdef VGPU_ASAN_RUNTIME
  // A sanitized build of the library needs the sanitizer runtime loaded first.
  preload = std::string(VGPU_ASAN_RUNTIME) + ":" + preload;
  // The sanitizer is there for vgpu's library, not to judge the program: the
  // program and NVIDIA's libraries are not built for LeakSanitizer (cuBLAS
  // keeps allocations until exit), and a program that frees with the other
  // allocator (NVIDIA's SobolQRNG: new[] then delete) runs natively; either
  // would end the program here. What the user set stays.
  for (const char* option : {"detect_leaks=0", "alloc_dealloc_mismatch=0", "new_delete_type_mismatch=0"}) {
    const std::string name(option, std::strchr(option, '=') - option);
    const char* o = std::getenv("ASAN_OPTIONS");
    if (o && std::strstr(o, name.c_str())) continue;
    setenv("ASAN_OPTIONS", (std::string(o && *o ? o : "") + (o && *o ? ":" : "") + option).c_str(), 1);
  }
#endif
  prepend_env("LD_PRELOAD", preload);

  std::vector<char*> args;
  for (auto& a : command) args.push_back(a.data());
  args.push_back(nullptr);
  execv(program.c_str(), args.data());
  std::perror(("vgpu-run: " + program).c_str());
  return 127;
}
