#include "quota_json.h"

#include "vgpu/policy/units.h"

namespace vgpu::admin {

using nlohmann::json;
using namespace vgpu::policy;

json fields_json(const QuotaFields& f) {
  json j = json::object();
  if (f.gpu_time) j["gpu_time"] = format_gpu_time(*f.gpu_time);
  if (f.memory) j["memory"] = *f.memory ? format_bytes(*f.memory) : "none";
  if (f.weight) j["weight"] = *f.weight;
  if (f.on_exhaust) j["on_exhaust"] = on_exhaust_name(*f.on_exhaust);
  if (f.placement) j["placement"] = placement_name(*f.placement);
  return j;
}

json quota_json(const Quota& q) {
  json j;
  j["gpu_time"] = format_gpu_time(q.gpu_time);
  j["limited"] = !q.gpu_time.unlimited;
  j["budget_ns"] = q.gpu_time.unlimited ? 0 : q.gpu_time.budget_ns;
  j["memory"] = q.memory ? format_bytes(q.memory) : "none";
  j["memory_bytes"] = q.memory;
  j["weight"] = q.weight;
  j["on_exhaust"] = on_exhaust_name(q.on_exhaust);
  j["placement"] = q.placement ? placement_name(*q.placement) : "host";
  return j;
}

Result fields_from_request(const json& r, QuotaFields* out) {
  *out = {};
  if (r.contains("gpu_time")) {
    if (!r["gpu_time"].is_string())
      return Result::invalid_argument("gpu_time must be a string like 2h/week");
    GpuTime g;
    if (Result p = parse_gpu_time(r["gpu_time"].get<std::string>(), &g); !p.ok()) return p;
    out->gpu_time = g;
  }
  if (r.contains("memory")) {
    uint64_t bytes = 0;
    const json& m = r["memory"];
    if (!m.is_string())
      return Result::invalid_argument("memory must be a string like 4GiB or none");
    if (m.get<std::string>() != "none") {
      if (Result p = parse_bytes(m.get<std::string>(), &bytes); !p.ok()) return p;
    }
    out->memory = bytes;
  }
  if (r.contains("weight")) {
    const json& w = r["weight"];
    if (!w.is_number_integer() || w.get<int64_t>() < 1 || w.get<int64_t>() > kMaxWeight) {
      return Result::invalid_argument("weight must be a whole number from 1 to " +
                                      std::to_string(kMaxWeight));
    }
    out->weight = static_cast<uint32_t>(w.get<int64_t>());
  }
  if (r.contains("on_exhaust")) {
    if (!r["on_exhaust"].is_string())
      return Result::invalid_argument("on_exhaust must be reject, wait or best-effort");
    OnExhaust e{};
    if (Result p = parse_on_exhaust(r["on_exhaust"].get<std::string>(), &e); !p.ok()) return p;
    out->on_exhaust = e;
  }
  if (r.contains("placement")) {
    if (!r["placement"].is_string())
      return Result::invalid_argument("placement must be spread or pack");
    Placement p{};
    if (Result e = parse_placement(r["placement"].get<std::string>(), &p); !e.ok()) return e;
    out->placement = p;
  }
  return {};
}

}  // namespace vgpu::admin
