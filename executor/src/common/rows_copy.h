// What both backends need of a CopyRows (backend.h): which sides are device
// memory and how many bytes each side spans.
#pragma once

#include "vgpu/executor/backend.h"
#include "vgpu/protocol/rows.h"

namespace vgpu::executor::common {

struct RowsSides {
  bool dst_device = false, src_device = false;
  uint64_t dst_span = 0, src_span = 0;  // (height - 1) * pitch + width
};

// False when the copy is not a well-formed one: an unknown kind, a shape
// that is not one (proto::rows_span), or a host side without its bytes.
inline bool rows_sides(const CopyRows& c, RowsSides* out) {
  if (c.kind > proto::kRowsDeviceToDevice) return false;
  out->dst_device = c.kind != proto::kRowsDeviceToHost;
  out->src_device = c.kind != proto::kRowsHostToDevice;
  if ((!out->dst_device || !out->src_device) && !c.host) return false;
  return proto::rows_span(c.width, c.height, c.dst_pitch, &out->dst_span) &&
         proto::rows_span(c.width, c.height, c.src_pitch, &out->src_span);
}

}  // namespace vgpu::executor::common
