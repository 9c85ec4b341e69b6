// CPU implementations of sim_fixture.cu's kernels: a kernel plug-in for the
// sim backend (vgpu/sim_kernel.h), as a user would write one. Names are the
// kernels' mangled names (nm on an nvcc-compiled object). _Z7no_impli is
// deliberately missing.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "vgpu/sim_kernel.h"

namespace {

struct Pair {
  int a;
  double b;
};

template <class T>
T param(const vgpu_sim_launch* l, size_t offset) {
  T v;
  std::memcpy(&v, static_cast<const char*>(l->params) + offset, sizeof v);
  return v;
}

}  // namespace

#define KERNEL(name) extern "C" __attribute__((visibility("default"))) int vgpu_sim_##name

// saxpy(float a, const float* x, float* y, int n): params at 0, 8, 16, 24.
KERNEL(_Z5saxpyfPKfPfi)(vgpu_sim_launch* l) {
  const float a = param<float>(l, 0);
  const float* x = param<const float*>(l, 8);
  float* y = param<float*>(l, 16);
  const int n = param<int>(l, 24);
  for (int i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
  return 0;
}

// probe(unsigned* out): reports what the launch looked like.
KERNEL(_Z5probePj)(vgpu_sim_launch* l) {
  unsigned* out = param<unsigned*>(l, 0);
  for (int i = 0; i < 3; ++i) {
    out[i] = l->grid[i];
    out[3 + i] = l->block[i];
  }
  out[6] = static_cast<unsigned>(l->shared_mem);
  out[7] = static_cast<unsigned>(l->params_size);
  out[8] = static_cast<unsigned>(l->modeled_ns);
  return 0;
}

// with_struct(Pair p, char c, int* out): params at 0 (16 bytes), 16, 24.
KERNEL(_Z11with_struct4PaircPi)(vgpu_sim_launch* l) {
  const Pair p = param<Pair>(l, 0);
  const char c = param<char>(l, 16);
  int* out = param<int*>(l, 24);
  out[0] = p.a;
  out[1] = static_cast<int>(p.b);
  out[2] = c;
  return 0;
}

KERNEL(_Z12read_globalsPi)(vgpu_sim_launch* l) {
  int* out = param<int*>(l, 0);
  const int* counter = static_cast<const int*>(l->symbol_address(l, "g_counter"));
  const float* scale = static_cast<const float*>(l->symbol_address(l, "g_scale"));
  if (!counter || !scale) return 1;
  out[0] = *counter;
  out[1] = static_cast<int>(scale[1]);
  out[2] = l->symbol_address(l, "no_such_variable") == nullptr ? 1 : 0;
  return 0;
}

KERNEL(_Z12bump_counteri)(vgpu_sim_launch* l) {
  int* counter = static_cast<int*>(l->symbol_address(l, "g_counter"));
  if (!counter) return 1;
  *counter += param<int>(l, 0);
  return 0;
}

// crash(int* p): writes through whatever pointer it is given.
KERNEL(_Z5crashPi)(vgpu_sim_launch* l) {
  volatile int* p = param<int*>(l, 0);
  *p = 1;
  return 0;
}

// spin(int* flag): never ends while *flag is 0.
KERNEL(_Z4spinPi)(vgpu_sim_launch* l) {
  volatile int* flag = param<int*>(l, 0);
  while (*flag == 0) {
  }
  return 0;
}

KERNEL(_Z4failv)(vgpu_sim_launch*) { return 3; }

// slow(unsigned long long ns): models its own duration.
KERNEL(_Z4slowy)(vgpu_sim_launch* l) {
  l->modeled_ns = param<unsigned long long>(l, 0);
  return 0;
}

// read_texture(cudaTextureObject_t tex, float* out): out[0] = tex2D<float>(tex, 1.5, 0.5);
// params at 0, 8. Returns the helper's error for an object this context
// does not have.
VGPU_SIM_REQUIRE_ABI(4);
KERNEL(_Z12read_textureyPf)(vgpu_sim_launch* l) {
  float v = 0;
  if (int rc = l->texture_read(l, param<unsigned long long>(l, 0), 1.5f, 0.5f, 0, 0, 0, &v); rc != 0) return rc;
  *param<float*>(l, 8) = v;
  return 0;
}

// escape(long long* out): what a plug-in bug a guest exploits could do from
// the worker. Each slot is the call's result, or -errno when it failed:
//   [0] open("/etc/passwd")  [1] socket(AF_UNIX)  [2] getuid()
//   [3] creating a file in /tmp  [4] a new process (fork)
KERNEL(_Z6escapePx)(vgpu_sim_launch* l) {
  long long* out = param<long long*>(l, 0);
  const auto result = [](long r) { return r < 0 ? -static_cast<long long>(errno) : r; };
  const int fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
  out[0] = result(fd);
  if (fd >= 0) close(fd);
  const int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  out[1] = result(sock);
  if (sock >= 0) close(sock);
  out[2] = static_cast<long long>(getuid());
  char path[64];
  std::snprintf(path, sizeof path, "/tmp/vgpu-escape-%d", static_cast<int>(getpid()));
  const int file = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  out[3] = result(file);
  if (file >= 0) {
    close(file);
    unlink(path);
  }
  const long child = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);  // fork(), without glibc's bookkeeping
  if (child == 0) _exit(0);
  out[4] = result(child);
  if (child > 0) waitpid(static_cast<pid_t>(child), nullptr, 0);
  return 0;
}
