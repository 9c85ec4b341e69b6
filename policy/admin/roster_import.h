// The admin operation student.import: a class roster in one request, added in
// one transaction (policy::Store::import_students).
//
// Request: {"op": "student.import", "course": "C", "partial": false,
//           "dry_run": false, "rows": [{"row": 2, "name": "alice", "vm": "lab-01",
//           "uid": "1001", "gpu_time": "2h/week", "memory": "4GiB"}, ...]}
// (every field of a row but "row" and "name" may be left out; "uid" may be a
// string or a number). Answer: {"ok": false, "error": ...} when the whole
// import is refused (unknown course, not the teacher's course, a malformed
// request); else {"ok": true, "result": {"committed": bool, "added": N,
// "refused": M, "rows": [{"row": 2, "name": "alice", "added": true}, {"row": 3,
// "name": "bob", "added": false, "error": "why"}, ...]}}: without "partial" one
// refused row means nothing was committed.
#pragma once

#include <nlohmann/json.hpp>

#include "vgpu/policy/store.h"

namespace vgpu::admin {

// Runs the request; `changed` says whether anything was committed. Never throws.
nlohmann::json import_roster(policy::Store& store, const policy::Actor& by,
                             const nlohmann::json& request, bool* changed);

}  // namespace vgpu::admin
