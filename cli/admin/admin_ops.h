// The admin operations, from a JSON request to a JSON answer, against a
// policy store. vgpud runs them for admin-socket peers (and then applies the
// change live); vgpuctl --db runs the read-only ones itself on a database
// file when the daemon is down. One implementation, so both answer alike.
#pragma once

#include <nlohmann/json.hpp>

#include "vgpu/policy/store.h"

namespace vgpu::admin {

using nlohmann::json;

struct OpResult {
  json answer;           // {"ok": ...}
  bool changed = false;  // a change was made: the daemon re-reads quotas
};

// Whether `op` changes anything (vgpuctl --db refuses those).
bool is_change(std::string_view op);
// Runs one request as `by`. Never throws.
OpResult execute(policy::Store& store, const policy::Actor& by, const json& request, int64_t now);

json error_answer(std::string_view why);
json ok_answer(json result);

}  // namespace vgpu::admin
