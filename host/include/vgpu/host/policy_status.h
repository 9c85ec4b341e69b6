// Where a policy store refusal meets the wire: the one mapping from a
// vgpu::Result's category to the CUDA status a guest gets (a channel the
// daemon cannot open because the store failed). Nothing else in vgpud turns
// a store answer into a CUDA code, and nothing reads its message to do it.
#pragma once

#include "vgpu/protocol/status.h"
#include "vgpu/result.h"

namespace vgpu::host {

// ok: kSuccess; permission denied and read-only: kNotPermitted; a value, a
// name or a state the store refused: kInvalidValue; busy, storage and
// unavailable: kUnknown.
Status guest_status(const vgpu::Result& result);

}  // namespace vgpu::host
