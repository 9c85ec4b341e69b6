#include "context.h"

#include <algorithm>

namespace vgpu::executor::cuda {

bool Context::record(uint64_t dptr, uint64_t size, AllocKind kind) {
  const uint64_t reserved = common::reserved_size(size);
  if (!allocations.insert(dptr, Allocation{size, reserved, kind, false})) return false;
  charged += reserved;
  return true;
}

void Context::forget(TenantLedger& ledger, uint64_t dptr) {
  const Allocation* a = allocations.find_start(dptr);
  if (!a) return;
  ledger.release(tenant, a->reserved);
  charged -= std::min(charged, a->reserved);
  allocations.erase(dptr);
}

void Context::forget_user_state(TenantLedger& ledger) {
  std::vector<uint64_t> user;
  for (const auto& [addr, a] : allocations.live()) {
    if (a.kind == AllocKind::kUser) user.push_back(addr);
  }
  for (uint64_t addr : user) forget(ledger, addr);
  events.clear();
  streams.clear();
  textures.clear();
}

void Context::forget_device_state(TenantLedger& ledger) {
  ledger.release(tenant, charged);  // the heap's charge with the rest
  charged = 0;
  heap_bytes = kDefaultHeapBytes;   // a fresh worker's context has the default heap
  allocations.clear();
  events.clear();
  streams.clear();
  textures.clear();
}

}  // namespace vgpu::executor::cuda
