// A unit of queued GPU work: what to run, for whom, and where the answer goes.
#pragma once

#include "vgpu/executor/backend.h"
#include "vgpu/protocol/reply_to.h"
#include "vgpu/scheduler/types.h"

namespace vgpu::scheduler {

struct Command {
  TenantId tenant = 0;
  executor::Work work;
  proto::ReplyTo reply;
};

}  // namespace vgpu::scheduler
