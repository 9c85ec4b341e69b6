// cuGetProcAddress: NVIDIA's runtime and libraries ask for every driver entry
// point by name, CUDA version and stream mode. The table is generated from the
// toolkit's typedefs (gen_entry_points.py); each name's newest form at or
// below the asked version is handed out.
#include <cstring>
#include <string_view>

#include "driver_state.h"
#include "proc_table.h"

namespace {

CUresult lookup(const char* symbol, void** pfn, int version, cuuint64_t flags,
                CUdriverProcAddressQueryResult* status) {
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  const bool per_thread = flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  const std::string_view name(symbol);
  const vgpu_proc_entry* legacy = nullptr;
  const vgpu_proc_entry* threaded = nullptr;
  bool known = false;
  for (size_t i = 0; i < vgpu_proc_table_size; ++i) {
    const vgpu_proc_entry& e = vgpu_proc_table[i];
    if (name != e.name) continue;
    known = true;
    if (e.version > version) continue;
    const vgpu_proc_entry*& best = e.per_thread ? threaded : legacy;
    if (!best || e.version > best->version) best = &e;
  }
  // A per-thread form newer than the legacy one wins when asked for.
  const vgpu_proc_entry* pick = legacy;
  if (per_thread && threaded && (!legacy || threaded->version >= legacy->version)) pick = threaded;
  if (!pick) {
    if (status) {
      *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                      : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    }
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = pick->address;
  if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* status) {
  return lookup(symbol, pfn, version, flags, status);
}

CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  return lookup(symbol, pfn, version, flags, nullptr);
}

}  // extern "C"
