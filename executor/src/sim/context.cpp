#include "context.h"

#include <algorithm>
#include <cstring>

namespace vgpu::executor::sim {

Context::Context(ContextId id_, TenantId tenant_, std::unique_ptr<Arena> arena_,
                 uint64_t slot_base_, uint64_t seed)
    : ContextTables(seed),
      id(id_),
      tenant(tenant_),
      arena(std::move(arena_)),
      slot_base(slot_base_),
      allocations(slot_base_, arena->span()) {}

Status Context::alloc(TenantLedger& ledger, uint64_t size, AllocKind kind, uint64_t* dptr,
                      uint64_t align) {
  const uint64_t reserved = AllocationTable::reserved_size(size);
  if (reserved == 0 || reserved > arena->span() || allocations.count() >= kMaxAllocations) {
    return Status::kMemoryAllocation;
  }
  if (!ledger.reserve(tenant, reserved)) return Status::kMemoryAllocation;
  const uint64_t addr = allocations.allocate(size, kind, align);
  if (addr == 0) {
    ledger.release(tenant, reserved);
    return Status::kMemoryAllocation;
  }
  if (!arena->set_length(allocations.high_water())) {
    uint64_t off, len;
    allocations.release(addr, &off, &len);
    ledger.release(tenant, reserved);
    return Status::kMemoryAllocation;
  }
  charged += reserved;
  *dptr = addr;
  return Status::kSuccess;
}

void Context::free(TenantLedger& ledger, uint64_t dptr) {
  const uint64_t reserved = allocations.find_start(dptr)->reserved;
  uint64_t hole_offset = 0, hole_size = 0;
  allocations.release(dptr, &hole_offset, &hole_size);
  ledger.release(tenant, reserved);
  charged -= reserved;
  arena->release(hole_offset, hole_size);
  arena->set_length(allocations.high_water());  // shrinking only fails if nothing changes
}

void Context::unload(TenantLedger& ledger, Handle module) {
  auto it = modules.find(module);
  if (it == modules.end()) return;
  for (const auto& [name, addr] : it->second.variables) free(ledger, addr);
  for (const auto& [name, fn] : it->second.functions) functions.erase(fn);
  modules.erase(it);
  ++symbols_version;
}

void Context::initialise(uint64_t dptr, const fatbin::Variable& v) {
  const Allocation* a = allocations.find_start(dptr);
  if (!a) return;
  uint8_t* p = arena->at(dptr - slot_base);
  const uint64_t n = std::min<uint64_t>(v.init.size(), a->size);
  if (n > 0) std::memcpy(p, v.init.data(), n);
  std::memset(p + n, 0, a->size - n);
}

std::vector<WorkerSymbol> Context::symbols() const {
  std::vector<WorkerSymbol> out;
  for (const auto& [handle, m] : modules) {
    for (const auto& [name, addr] : m.variables) {
      auto a = allocations.live().find(addr);
      out.push_back(WorkerSymbol{handle, addr, a == allocations.live().end() ? 0 : a->second.size,
                                 name});
    }
  }
  return out;
}

}  // namespace vgpu::executor::sim
