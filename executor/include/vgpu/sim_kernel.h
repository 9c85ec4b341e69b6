/* vgpu sim backend: the plug-in ABI for CPU implementations of CUDA kernels.
 *
 * This ABI is fixed: plug-ins written against it keep working. A plug-in is a
 * shared library exporting one function per kernel, named "vgpu_sim_" followed
 * by the kernel's mangled device name, e.g. vgpu_sim__Z5saxpyfPKfPfi for
 * __global__ void saxpy(float, const float*, float*, int).
 *
 * vgpud loads plug-ins from the colon-separated paths in VGPU_SIM_KERNELS and
 * from each --sim-kernels PATH. A kernel no plug-in exports runs from its PTX
 * on vgpu's interpreter when it can (docs/compatibility.md); a plug-in's
 * implementation wins over the interpreter. Kernels run in a worker process that maps only
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
 *   4: texture_read, texture_fetch, surface_read, surface_write
 *   5: cluster
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
  /* Version 4. Texture and surface objects: the cudaTextureObject_t and
   * cudaSurfaceObject_t values a kernel gets as parameters.
   *
   * texture_read is tex1D/2D/3D, tex1DLayered/tex2DLayered,
   * texCubemap/texCubemapLayered and their Lod forms in one: (x, y, z) are
   * the coordinates (the direction for a cubemap; unused ones 0), `layer`
   * the layer of a layered texture, `lod` the level of a mipmapped one. It
   * applies the object's addressing (wrap, clamp, mirror, border; wrap and
   * mirror with normalized coordinates only, as on a GPU), filtering (point;
   * linear with 8-bit weights, bi- and trilinear; point or linear between
   * mip levels), normalized-float conversion of integer formats and sRGB,
   * and writes the object's channel count of values to `out`: floats when
   * the texture returns floats (float and half formats, or integer formats
   * read as normalized floats), else elements of its format (a uchar4 for
   * 4 x 8-bit unsigned read as element type).
   *
   * texture_fetch is tex1Dfetch: element `index` of a texture over linear
   * memory (cudaResourceTypeLinear), zeros outside it, converted as above.
   *
   * surface_read/surface_write are surf1D/2D/3D(Layered) read and write:
   * `x_bytes` in bytes as CUDA's take it, y and z in elements (z: the layer,
   * or layer * 6 + face of a cubemap), `size` bytes (1, 2, 4, 8 or 16);
   * `boundary` is cudaSurfaceBoundaryMode (0 zero, 1 clamp, 2 trap).
   *
   * Each returns 0, or nonzero for an unknown object or a trapped access: the
   * kernel should return that value, and the launch fails as a GPU's
   * illegal access would. */
  int (*texture_read)(const struct vgpu_sim_launch *self, unsigned long long texture, float x,
                      float y, float z, int layer, float lod, void *out);
  int (*texture_fetch)(const struct vgpu_sim_launch *self, unsigned long long texture,
                       long long index, void *out);
  int (*surface_read)(const struct vgpu_sim_launch *self, unsigned long long surface,
                      long long x_bytes, long long y, long long z, void *out, size_t size,
                      int boundary);
  int (*surface_write)(const struct vgpu_sim_launch *self, unsigned long long surface,
                       const void *in, size_t size, long long x_bytes, long long y, long long z,
                       int boundary);
  /* Version 5. The launch's thread block cluster shape ({1, 1, 1}: none),
   * from the launch or the kernel's __cluster_dims__; each grid dimension is
   * a multiple of it. A block's cluster is blockIdx / cluster; the plug-in
   * runs every block, so what a cluster shares (cluster.sync(), distributed
   * shared memory) is the plug-in's to model. */
  unsigned cluster[3];
};

#define VGPU_SIM_ABI 5
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

/* cudaGraphSetConditional(handle, value): on vgpu a conditional handle is the
 * address of a 4-byte cell of the tenant's device memory, which the worker
 * maps as it maps the rest of it; a graph launch reads the cell when it
 * reaches the conditional node. Needs no member of vgpu_sim_launch, so any
 * ABI version has it. */
static inline void vgpu_sim_graph_set_conditional(unsigned long long handle, unsigned value) {
  *(unsigned *)(size_t)handle = value;
}

#ifdef __cplusplus
}
#endif

#endif /* VGPU_SIM_KERNEL_H */
