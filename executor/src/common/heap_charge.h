// The device heap's charge, the same on both backends: CUDA's default heap
// (kDefaultHeapBytes) costs the tenant nothing, as it always has; the bytes a
// program asks for above it (cudaLimitMallocHeapSize) are device memory,
// charged to the tenant like an allocation.
#pragma once

#include <cstdint>

#include "common/tenant_ledger.h"
#include "vgpu/executor/backend.h"

namespace vgpu::executor::common {

inline uint64_t heap_charge(uint64_t heap_bytes) {
  return heap_bytes > kDefaultHeapBytes ? heap_bytes - kDefaultHeapBytes : 0;
}

// Moves a context's charge from a heap of `from` bytes to one of `to`:
// reserves the difference, or gives it back. False, with nothing changed,
// when the tenant has not the room. *charged follows.
inline bool recharge_heap(TenantLedger& ledger, TenantId tenant, uint64_t from, uint64_t to,
                          uint64_t* charged) {
  const uint64_t before = heap_charge(from), after = heap_charge(to);
  if (after > before) {
    if (!ledger.reserve(tenant, after - before)) return false;
    *charged += after - before;
  } else if (before > after) {
    ledger.release(tenant, before - after);
    *charged -= before - after;
  }
  return true;
}

}  // namespace vgpu::executor::common
