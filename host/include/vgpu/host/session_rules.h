// Which guest processes (clients) a channel may have sessions for.
//
// A real VM's kernel module gives each open /dev/vgpu file a client id
// (generation << 8) | (slot + 1) and reuses a slot, with the next generation,
// only after the host has answered the old client's Goodbye
// (protocol/vm_region.h). So a channel never has two live clients on one
// slot. A request from a new client whose slot another client still holds
// comes from a guest kernel that breaks the rules; serving it would make a
// device context for each made-up generation (2^24 per slot) and exhaust the
// host's contexts for every tenant. A simulated VM has one client, 0, which
// this rule also covers.
#pragma once

#include <cstdint>

namespace vgpu::host {

template <class Sessions>  // a map keyed by client id
bool session_allowed(const Sessions& sessions, uint32_t client) {
  if (sessions.count(client)) return true;
  for (const auto& [other, session] : sessions) {
    if ((other & 0xffu) == (client & 0xffu)) return false;
  }
  return true;
}

}  // namespace vgpu::host
