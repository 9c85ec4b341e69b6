// Whom each VM admitted since vgpud started belongs to: its name, and the
// student and course it was bound to when it was last admitted. Kept after
// the VM goes (VMs are few): the journal's fields name them
// (journal_log.h), and the metrics keep counting a VM's GPU time under its
// student after its program ended (metrics.h).
#pragma once

#include <optional>
#include <string>

#include "vgpu/scheduler/types.h"

namespace vgpu::host {

struct VmPeople {
  std::string vm;
  std::string student;  // empty: unassigned
  std::string course;
};

// Any thread.
void remember_vm(scheduler::TenantId tenant, VmPeople people);
std::optional<VmPeople> people_of_vm(const std::string& vm);
std::optional<VmPeople> people_of_tenant(scheduler::TenantId tenant);

}  // namespace vgpu::host
