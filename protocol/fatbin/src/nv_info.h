// A kernel's parameter layout from its .nv.info.<kernel> section: a sequence
// of attribute records {u8 format, u8 attribute, u16 value-or-length[, data]}.
#pragma once

#include "bytes.h"
#include "vgpu/fatbin/fatbin.h"

namespace vgpu::fatbin::detail {

// Fills k->params (by ordinal), k->param_bytes and k->cluster; k->name is
// left alone.
Error read_kernel_params(Bytes info, Kernel* k);

}  // namespace vgpu::fatbin::detail
