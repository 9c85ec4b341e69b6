// vgpu-test-vm bomb: module loads that cost the host as much as it allows.
#pragma once

#include "channel.h"

namespace vgpu::testvm {

// For `seconds`, pipelined ModuleLoads of a ~60 KB fat binary whose four zstd
// entries inflate to 60 MiB each (240 MiB, within vgpud's default limit; not
// an ELF, so each is refused after the work), and every eighth one of four
// entries of 1 GiB (over the limit: refused before any work). Every load must
// be answered with an error. Prints "loads N", then "RESULT ok" (0) or
// "RESULT fail: why" (1).
int run_bomb(Channel& ch, double seconds);

}  // namespace vgpu::testvm
