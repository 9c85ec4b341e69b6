// vgpuctl vm attach|detach|list|sessions: VMs that are libvirt domains
// (docs/libvirt.md). attach and detach change the domain's persistent
// definition through libvirt and the binding through vgpud together, or
// neither: every refusal is one line and changes nothing.
#pragma once

#include <string>

#include "context.h"

namespace vgpu::ctl {

int attach_domain(Context& ctx, const std::string& domain, const std::string& student,
                  const std::string& vm);
int detach_domain(Context& ctx, const std::string& domain);
// vgpuctl vm allow|disallow DOMAIN --course C: whether the course's teachers
// may attach the domain (admins).
int allow_domain(Context& ctx, const std::string& domain, const std::string& course, bool allow);

}  // namespace vgpu::ctl
