// The admin operations, from a JSON request to a JSON answer, against a
// policy store. vgpud runs them for admin-socket peers (and then applies the
// change live); vgpuctl --db runs the read-only ones itself on a database
// file when the daemon is down. One implementation, so both answer alike.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <type_traits>

#include "vgpu/policy/store.h"

namespace vgpu::admin {

using nlohmann::json;

struct OpResult {
  json answer;           // {"ok": ...}
  bool changed = false;  // a change was made: the daemon re-reads quotas
};

// Whether `op` changes anything (vgpuctl --db refuses those).
bool is_change(std::string_view op);
// A request's field `key` if the request is an object and the field has T's
// JSON type, else `otherwise`. Never throws: a request is a peer's bytes, and
// any field may be missing or of any type (json::value throws on a mismatch).
template <class T>
T field(const json& request, const char* key, T otherwise) {
  if (!request.is_object()) return otherwise;
  auto it = request.find(key);
  if (it == request.end()) return otherwise;
  if constexpr (std::is_same_v<T, bool>) {
    return it->is_boolean() ? it->template get<bool>() : otherwise;
  } else {
    return it->is_string() ? it->template get<std::string>() : otherwise;
  }
}
inline std::string op_of(const json& request) { return field<std::string>(request, "op", ""); }
// What only the running daemon knows: its connected VMs and its own state.
// The table's `top`, `status` and `usage.flush` ask it; without one (vgpuctl
// --db on a database file) they answer that they need vgpud.
class LiveState {
 public:
  virtual ~LiveState() = default;
  // The connected VMs `by` may see (admins every one, a teacher their
  // courses', a student their own).
  virtual json top(const policy::Actor& by) = 0;
  // The daemon's own accounting (host/daemon_status.h); asked for admins only.
  virtual json status() = 0;
  // Writes the usage measured so far to the ledger; returns once it is there.
  // An error if this daemon cannot, or if some usage is not there yet (it
  // waits in the daemon's spool while the database cannot take it).
  virtual Result flush_usage() = 0;
};

// Runs one request as `by`. Never throws.
OpResult execute(policy::Store& store, const policy::Actor& by, const json& request, int64_t now,
                 LiveState* live = nullptr);

// {"ok": false, "error": why}. The admin protocol carries only the message:
// a refusal of the store answers with its Result's message (its category's
// name if it has none), whatever the category (docs/quotas.md).
json error_answer(std::string_view why);
json error_answer(const vgpu::Result& refused);
json ok_answer(json result);

}  // namespace vgpu::admin
