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
Status set_on_device(Connection& c, uint64_t dst, int value, uint64_t size, uint64_t stream,
                     bool sync) REQUIRES(c.mutex());

}  // namespace vgpu::intercept
