// Quotas as JSON, in human units with the raw numbers beside them.
#pragma once

#include <nlohmann/json.hpp>

#include "vgpu/policy/quota.h"

namespace vgpu::admin {

// Only the fields that are set: {"gpu_time": "2h/week", "memory": "4GiB", ...}.
nlohmann::json fields_json(const policy::QuotaFields& f);
// Every field, e.g. {"gpu_time": "2h/week", "limited": true, "budget_ns": ..., ...}.
nlohmann::json quota_json(const policy::Quota& q);
// The fields a request sets (human strings), or false with `why`.
bool fields_from_request(const nlohmann::json& request, policy::QuotaFields* out, std::string* why);

}  // namespace vgpu::admin
