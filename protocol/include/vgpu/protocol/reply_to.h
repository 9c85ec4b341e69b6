// Where the answer to a request goes. Carried with queued work through the
// scheduler so the reply can be written when the work has run.
#pragma once

#include <cstdint>

namespace vgpu::proto {

struct ReplyTo {
  uint64_t channel = 0;     // the endpoint the request arrived on (the tenant's channel)
  uint64_t request_id = 0;  // echoed in the reply
  uint32_t client = 0;      // guest process within the channel
  uint16_t opcode = 0;
  bool quiet = false;       // VGPU_MSG_QUIET: reply only on failure
  // When the host read a request the guest waits for (steady clock ns), for
  // the call latency metrics; 0: not timed (quiet requests, which nobody
  // waits for, pay no clock read).
  uint64_t received_ns = 0;
};

}  // namespace vgpu::proto
