// What a cubin (an ELF64 image for one SM) says about its kernels and device
// variables:
// - a kernel is a defined STT_FUNC symbol with STO_CUDA_ENTRY (0x10) in
//   st_other; its layout is in the section ".nv.info.<name>" (a kernel without
//   one is left out: no layout is better than a guessed one);
// - a variable is a defined object symbol (STT_OBJECT, or type 13 in
//   relocatable cubins) in .nv.global (zero-filled, NOBITS), .nv.global.init
//   (__device__ with an initializer) or .nv.constant<N>, N > 0 (__constant__;
//   bank 0 holds kernel parameters). Initial bytes that are all zero are
//   reported as empty (zero-filled).
#pragma once

#include "bytes.h"
#include "module_builder.h"

namespace vgpu::fatbin::detail {

Error read_cubin(Bytes image, ModuleBuilder* out);

}  // namespace vgpu::fatbin::detail
