#include "vgpu/host/vm_people.h"

#include <mutex>
#include <unordered_map>

namespace vgpu::host {

namespace {

struct Registry {
  std::mutex mu;
  std::unordered_map<scheduler::TenantId, VmPeople> by_tenant;  // guarded by mu
  std::unordered_map<std::string, scheduler::TenantId> by_vm;   // guarded by mu
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void remember_vm(scheduler::TenantId tenant, VmPeople people) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.by_vm[people.vm] = tenant;
  r.by_tenant[tenant] = std::move(people);
}

std::optional<VmPeople> people_of_vm(const std::string& vm) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  const auto t = r.by_vm.find(vm);
  if (t == r.by_vm.end()) return std::nullopt;
  return r.by_tenant.at(t->second);
}

std::optional<VmPeople> people_of_tenant(scheduler::TenantId tenant) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  const auto it = r.by_tenant.find(tenant);
  if (it == r.by_tenant.end()) return std::nullopt;
  return it->second;
}

}  // namespace vgpu::host
