// The admin protocol between vgpuctl and vgpud: JSON lines over a Unix
// stream socket at <runtime-dir>/vgpud-admin.sock.
//
// Each request is one JSON object on one line, {"op": "...", ...arguments};
// each answer is one line, {"ok": true, "result": ...} or
// {"ok": false, "error": "one line"}. A connection may carry many requests
// (vgpuctl top polls on one). The daemon maps the peer's uid (SO_PEERCRED)
// to a role; the message cannot name who is asking. See docs/quotas.md.
#pragma once

#include <cstddef>
#include <string_view>

namespace vgpu::admin {

inline constexpr std::string_view kAdminSocketName = "vgpud-admin.sock";
inline constexpr size_t kMaxLineBytes = 1 << 20;  // a longer request is refused
// vgpuctl sends it as "protocol" in every request; vgpud refuses a request
// that names another, saying which each side speaks (a request without it
// is taken as version 1).
inline constexpr int kProtocolVersion = 1;

}  // namespace vgpu::admin
