// Work numbered for the dispatcher's batch tests: the order the backend saw
// it in, and the order it was answered in, read back from the work itself.
#pragma once

#include <variant>

#include "vgpu/executor/backend.h"

namespace vgpu::test {

// A launch's sequence number travels in its grid.x; a memset's in its value.
inline int seq_of(const executor::Work& w) {
  if (auto* l = std::get_if<executor::Launch>(&w.op)) return static_cast<int>(l->grid[0]);
  return std::get<executor::Memset>(w.op).value;
}

}  // namespace vgpu::test
