// The worker's PTX modules: each module's text as the backend sent it
// (wire::PtxChunk), parsed at the first launch that needs it. A kernel no
// plug-in implements runs from it through the interpreter (ptx/).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "ptx/ptx_program.h"
#include "worker_protocol.h"

namespace vgpu::executor::sim {

class WorkerPtx {
 public:
  // One chunk and its `h.bytes` of text. False for a protocol error (a chunk
  // out of order). A module whose text would bring the worker past
  // wire::kMaxWorkerPtxBytes keeps none.
  bool add_chunk(const wire::PtxChunk& h, const char* text);

  // The module's parsed program; nullptr (and *why, empty when the module
  // simply has no PTX) if there is none.
  const ptx::Program* program(uint64_t module, std::string* why);

 private:
  struct Module {
    std::string text;  // freed once parsed
    uint64_t total = 0;
    uint64_t received = 0;
    bool dropped = false;  // over the bound: no text kept
    bool parsed = false;
    std::unique_ptr<ptx::Program> program;
    std::string error;
  };
  std::unordered_map<uint64_t, Module> modules_;
  uint64_t held_ = 0;  // bytes of text kept (parsed or not), all modules, for the worker's life
};

}  // namespace vgpu::executor::sim
