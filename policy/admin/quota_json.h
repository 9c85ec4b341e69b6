// Quotas as JSON, in human units with the raw numbers beside them.
#pragma once

#include <nlohmann/json.hpp>

#include "vgpu/policy/quota.h"
#include "vgpu/result.h"

namespace vgpu::admin {

// Only the fields that are set: {"gpu_time": "2h/week", "memory": "4GiB", ...}.
nlohmann::json fields_json(const policy::QuotaFields& f);
// Every field, e.g. {"gpu_time": "2h/week", "limited": true, "budget_ns": ..., ...}.
nlohmann::json quota_json(const policy::Quota& q);
// The fields a request sets (human strings); invalid argument for a value of
// the wrong type or one the unit parsers refuse.
Result fields_from_request(const nlohmann::json& request, policy::QuotaFields* out);

}  // namespace vgpu::admin
