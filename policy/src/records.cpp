#include "vgpu/policy/records.h"

#include "vgpu/policy/units.h"

namespace vgpu::policy {

std::string_view role_name(Role r) { return r == Role::kAdmin ? "admin" : "teacher"; }

std::string describe(const QuotaFields& f) {
  std::string out;
  auto add = [&out](const std::string& part) { out += (out.empty() ? "" : " ") + part; };
  if (f.gpu_time) add("gpu-time=" + format_gpu_time(*f.gpu_time));
  if (f.memory) add("memory=" + (*f.memory ? format_bytes(*f.memory) : std::string("none")));
  if (f.weight) add("weight=" + std::to_string(*f.weight));
  if (f.on_exhaust) add("on-exhaust=" + std::string(on_exhaust_name(*f.on_exhaust)));
  if (f.placement) add("placement=" + std::string(placement_name(*f.placement)));
  return out.empty() ? "(nothing set)" : out;
}

}  // namespace vgpu::policy
