// Bulk copies between the program's memory and the device, through the data
// area in pipelined chunks. The connection lock must be held (Connection::Lock).
#pragma once

#include <cstdint>

#include "connection.h"

namespace vgpu::intercept {

// `sync`: wait until the copy is done and return its status (and earlier
// asynchronous failures); otherwise return once the bytes are staged (for
// host-to-device) or queued (device-to-host: the bytes land in `dst` when the
// host answers, before any later synchronising call returns).
Status copy_to_device(Connection& c, uint64_t dst, const void* src, uint64_t size,
                      uint64_t stream, bool sync) REQUIRES(c.mutex());
Status copy_from_device(Connection& c, void* dst, uint64_t src, uint64_t size, uint64_t stream,
                        bool sync) REQUIRES(c.mutex());
Status copy_on_device(Connection& c, uint64_t dst, uint64_t src, uint64_t size, uint64_t stream,
                      bool sync) REQUIRES(c.mutex());
// `height` rows of `width` bytes, each side's rows its pitch apart (2D and 3D
// copies): a request carries as many whole rows as a chunk of the data area
// holds, not one row each. The same promises as the copies above.
struct Rows {
  uint64_t width = 0, height = 0;
  uint64_t dst_pitch = 0, src_pitch = 0;
};
Status copy_rows_to_device(Connection& c, uint64_t dst, const void* src, const Rows& rows,
                           uint64_t stream, bool sync) REQUIRES(c.mutex());
Status copy_rows_from_device(Connection& c, void* dst, uint64_t src, const Rows& rows,
                             uint64_t stream, bool sync) REQUIRES(c.mutex());
Status copy_rows_on_device(Connection& c, uint64_t dst, uint64_t src, const Rows& rows,
                           uint64_t stream, bool sync) REQUIRES(c.mutex());
Status set_on_device(Connection& c, uint64_t dst, int value, uint64_t size, uint64_t stream,
                     bool sync) REQUIRES(c.mutex());

}  // namespace vgpu::intercept
