/* vgpu sim backend: the plug-in ABI for CPU implementations of CUDA kernels.
 *
 * This ABI is fixed: plug-ins written against it keep working. A plug-in is a
 * shared library exporting one function per kernel, named "vgpu_sim_" followed
 * by the kernel's mangled device name, e.g. vgpu_sim__Z5saxpyfPKfPfi for
 * __global__ void saxpy(float, const float*, float*, int).
 *
 * vgpud loads plug-ins from the colon-separated paths in VGPU_SIM_KERNELS and
 * from each --sim-kernels PATH. Kernels run in a worker process that maps only
 * the calling tenant's device memory, so a plug-in dereferencing a bad pointer
 * faults that tenant's context, not the daemon.
 *
 * Versions: struct vgpu_sim_launch only ever grows at its end, and vgpud
 * always passes the whole struct of its own version, so a plug-in built
 * against an older header keeps working. A plug-in that uses a member added
 * in version N says so with VGPU_SIM_REQUIRE_ABI(N) once in its sources; a
 * vgpud older than N refuses to load it, by name, rather than let it read a
 * member that is not there.
 *   1: grid .. backend
 *   2: device_printf
 *   3: device_assert
 */
#ifndef VGPU_SIM_KERNEL_H
#define VGPU_SIM_KERNEL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vgpu_sim_launch {
  unsigned grid[3], block[3];
  size_t shared_mem;                 /* dynamic shared memory in bytes */
  const void *params;                /* packed parameter buffer, laid out as the kernel's metadata says */
  size_t params_size;
  unsigned long long modeled_ns;     /* in: the backend's estimate; out: the plug-in may set its own */
  void *(*symbol_address)(const struct vgpu_sim_launch *self, const char *device_name); /* this tenant's __device__/__constant__ variable, by name; NULL if unknown */
  void *backend;                     /* opaque, for symbol_address */
  /* Version 2. A kernel's printf: formats as printf does and appends to the
   * launching tenant's device output, which reaches that program's stdout at
   * its next synchronising call (bounded by its cudaLimitPrintfFifoSize).
   * Returns the number of characters, as printf. */
  int (*device_printf)(const struct vgpu_sim_launch *self, const char *format, ...)
      __attribute__((format(printf, 2, 3)));
  /* Version 3. A kernel's failed assert(expression), in thread `thread` of
   * block `block`: the message CUDA prints reaches the program's stderr,
   * and the launch ends the tenant's context with cudaErrorAssert once the
   * kernel returns (the kernel may go on, as other GPU threads do). */
  void (*device_assert)(const struct vgpu_sim_launch *self, const unsigned block[3],
                        const unsigned thread[3], const char *expression, const char *file,
                        unsigned line, const char *function);
};

#define VGPU_SIM_ABI 3
/* The ABI version a plug-in needs (see above): exported as vgpu_plugin_abi,
 * outside the vgpu_sim_ prefix, which names kernels only. */
#ifdef __cplusplus
#define VGPU_SIM_REQUIRE_ABI(n) \
  extern "C" __attribute__((visibility("default"))) const int vgpu_plugin_abi = (n)
#else
#define VGPU_SIM_REQUIRE_ABI(n) __attribute__((visibility("default"))) const int vgpu_plugin_abi = (n)
#endif

/* Each kernel implementation: returns 0, or nonzero for a launch failure. */
typedef int (*vgpu_sim_kernel_fn)(struct vgpu_sim_launch *launch);

#define VGPU_SIM_SYMBOL_PREFIX "vgpu_sim_"

#ifdef __cplusplus
}
#endif

#endif /* VGPU_SIM_KERNEL_H */
