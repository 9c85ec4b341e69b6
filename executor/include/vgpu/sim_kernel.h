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
};

/* Each kernel implementation: returns 0, or nonzero for a launch failure. */
typedef int (*vgpu_sim_kernel_fn)(struct vgpu_sim_launch *launch);

#define VGPU_SIM_SYMBOL_PREFIX "vgpu_sim_"

#ifdef __cplusplus
}
#endif

#endif /* VGPU_SIM_KERNEL_H */
