/* The tables gen_entry_points.py derives from the toolkit (C, so that the
   generated file can name every entry point without cuda.h's prototypes). */
#ifndef VGPU_INTERCEPT_DRIVER_PROC_TABLE_H
#define VGPU_INTERCEPT_DRIVER_PROC_TABLE_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One (name, version) that cuGetProcAddress answers, and what it answers. */
struct vgpu_proc_entry {
  const char* name;   /* the API name, e.g. "cuMemAlloc" */
  int version;        /* the CUDA version that introduced this form, e.g. 3020 */
  int per_thread;     /* 1: the per-thread default stream form (_ptds/_ptsz) */
  void* address;      /* our definition: forwarded, answered locally or refused */
};
extern const struct vgpu_proc_entry vgpu_proc_table[];
extern const size_t vgpu_proc_table_size;

/* Every name the toolkit's libcuda.so exports; each is defined here too. */
extern const char* const vgpu_driver_exports[];
extern const size_t vgpu_driver_exports_size;

struct vgpu_error_text {
  int value;
  const char* name;
  const char* description;
};
extern const struct vgpu_error_text vgpu_error_table[];
extern const size_t vgpu_error_table_size;

#ifdef __cplusplus
}
#endif
#endif
