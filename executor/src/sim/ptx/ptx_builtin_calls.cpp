// The external functions a kernel may call: device printf (vprintf), assert (__assertfail),
// the device heap (malloc, free), and the hand-off to the device runtime's calls
// (ptx_device_launch.cpp). Everything else a kernel calls without a body is refused by name.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "ptx_exec.h"

namespace vgpu::executor::sim::ptx {
namespace {

std::string read_string(uint64_t addr) {
  if (addr == 0) return "(null)";
  const char* s = reinterpret_cast<const char*>(addr);
  return std::string(s, strnlen(s, 1 << 16));
}

}  // namespace

// vprintf, __assertfail, malloc and free, and the device runtime's calls (ptx_device_launch.cpp):
// the only external functions a kernel may call.
bool builtin_call(Context& c, Thread& t, const Instr& in, const Function& callee) {
  const Program& p = *c.p;
  if (device_runtime_function(callee.name)) {
    std::vector<const uint8_t*> slots;
    std::vector<uint64_t> sizes;
    for (int64_t i = 0; i < in.ops[2].value; ++i) {
      const Symbol& s = p.symbols[p.vector_elements[in.ops[2].id + i].id];
      slots.push_back(param_slot(t, s, t.param_base));
      sizes.push_back(s.size);
    }
    uint8_t* ret = nullptr;
    uint64_t ret_size = 0;
    if (in.ops[0].kind == Operand::kSym) {
      const Symbol& r = p.symbols[in.ops[0].id];
      ret = param_slot(t, r, t.param_base);
      ret_size = r.size;
    }
    return device_runtime_call(c, t, callee, slots, sizes, ret, ret_size);
  }
  std::vector<uint64_t> args;
  for (int64_t i = 0; i < in.ops[2].value; ++i) {
    const Symbol& s = p.symbols[p.vector_elements[in.ops[2].id + i].id];
    uint64_t v = 0;
    memcpy(&v, param_slot(t, s, t.param_base), std::min<uint64_t>(s.size, 8));
    args.push_back(v);
  }
  if (callee.name == "vprintf" && args.size() == 2) {
    std::string text = args[0] ? format_printf(reinterpret_cast<const char*>(args[0]), reinterpret_cast<const uint8_t*>(args[1])) : "";
    if (c.env->print) c.env->print(text);
    if (in.ops[0].kind == Operand::kSym) {
      const Symbol& r = p.symbols[in.ops[0].id];
      int32_t n = (int32_t)text.size();
      memcpy(param_slot(t, r, t.param_base), &n, std::min<uint64_t>(r.size, 4));
    }
    return true;
  }
  if (callee.name == "malloc" && args.size() == 1 && c.env->heap_alloc) {
    const uint64_t address = c.env->heap_alloc(args[0]);
    if (in.ops[0].kind == Operand::kSym) {
      const Symbol& r = p.symbols[in.ops[0].id];
      memcpy(param_slot(t, r, t.param_base), &address, std::min<uint64_t>(r.size, 8));
    }
    return true;
  }
  if (callee.name == "free" && args.size() == 1 && c.env->heap_free) {
    c.env->heap_free(args[0]);
    return true;
  }
  if (callee.name == "__assertfail" && args.size() >= 4) {
    c.result.outcome = Outcome::kTrap;
    c.result.message = read_string(args[1]) + ":" + std::to_string((uint32_t)args[2]) + ": " + read_string(args[3]) +
                       ": block [" + std::to_string(c.ctaid[0]) + "," + std::to_string(c.ctaid[1]) + "," + std::to_string(c.ctaid[2]) +
                       "], thread [" + std::to_string(t.tid[0]) + "," + std::to_string(t.tid[1]) + "," + std::to_string(t.tid[2]) +
                       "] Assertion `" + read_string(args[0]) + "` failed.";
    return false;
  }
  c.result.outcome = Outcome::kUnsupported;
  c.result.message = "call of external function " + callee.name;
  return false;
}


}  // namespace vgpu::executor::sim::ptx
