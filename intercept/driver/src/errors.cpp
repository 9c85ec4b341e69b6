// Error names and descriptions, for every CUresult of the toolkit's cuda.h
// (the table is generated from it).
#include "driver_state.h"
#include "proc_table.h"

namespace {

const vgpu_error_text* find(CUresult e) {
  for (size_t i = 0; i < vgpu_error_table_size; ++i) {
    if (vgpu_error_table[i].value == static_cast<int>(e)) return &vgpu_error_table[i];
  }
  return nullptr;
}

}  // namespace

extern "C" {

CUresult cuGetErrorName(CUresult error, const char** name) {
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  const vgpu_error_text* t = find(error);
  *name = t ? t->name : nullptr;
  return t ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char** text) {
  if (!text) return CUDA_ERROR_INVALID_VALUE;
  const vgpu_error_text* t = find(error);
  *text = t ? t->description : nullptr;
  return t ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"
