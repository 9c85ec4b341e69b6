// For the test programs that use the CUDA driver API directly (driver_api,
// nvrtc_program): CU_OK, beside common.h's PASS/FAIL/check conventions.
#pragma once

#include <cuda.h>

#include "common.h"

namespace vt {

inline void cu_ok(CUresult r, const char* call, int line) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(r, &name);
  fail("line %d: %s returned %s (%d)", line, call, name ? name : "?", static_cast<int>(r));
}

}  // namespace vt

// A driver API call that must succeed.
#define CU_OK(call) ::vt::cu_ok((call), #call, __LINE__)
