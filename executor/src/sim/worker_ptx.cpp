#include "worker_ptx.h"

#include <algorithm>

namespace vgpu::executor::sim {

bool WorkerPtx::add_chunk(const wire::PtxChunk& h, const char* text) {
  if (h.offset > h.total || h.bytes > h.total - h.offset) return false;
  Module& m = modules_[h.module];
  if (h.offset == 0) {  // a module's text (again: the backend resent it)
    m = Module{};
    m.total = h.total;
    // Past the bound the module keeps no text: its kernels are refused by
    // name, the context goes on.
    m.dropped = h.total > wire::kMaxWorkerPtxBytes - std::min(held_, wire::kMaxWorkerPtxBytes);
    if (!m.dropped) {
      m.text.reserve(h.total);
      held_ += h.total;
    }
  } else if (m.parsed || h.total != m.total || h.offset != m.received) {
    return false;
  }
  if (!m.dropped) m.text.append(text, h.bytes);
  m.received += h.bytes;
  return true;
}

const ptx::Program* WorkerPtx::program(uint64_t module, std::string* why) {
  why->clear();
  auto it = modules_.find(module);
  if (it == modules_.end()) return nullptr;
  Module& m = it->second;
  if (m.dropped) {
    *why = "this context's modules hold more PTX than the worker keeps";
    return nullptr;
  }
  if (!m.parsed) {
    if (m.received != m.total) {
      *why = "its PTX text did not arrive whole";
      return nullptr;
    }
    m.parsed = true;
    m.program = ptx::parse(m.text, &m.error);
    std::string().swap(m.text);  // the parsed form is what runs
  }
  if (!m.program) *why = "its PTX could not be parsed: " + m.error;
  return m.program.get();
}

}  // namespace vgpu::executor::sim
