// libFuzzer target: the admin protocol on arbitrary bytes, as vgpud runs it on
// every line a local user sends to its admin socket: JSON, then the op table
// (admin::execute) against a real SQLite store, as an admin (who may run every
// operation), and the field reads vgpud does around it. A request of any shape
// gets an answer, never an exception or a crash ({"op": 1} once ended vgpud).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "admin_ops.h"
#include "vgpu/policy/store.h"

namespace {

vgpu::policy::Store* store() {
  static std::unique_ptr<vgpu::policy::Store> s = [] {
    std::unique_ptr<vgpu::policy::Store> out;
    if (!vgpu::policy::open_sqlite_store(":memory:", &out).ok()) std::abort();
    return out;
  }();
  return s.get();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto request = nlohmann::json::parse(data, data + size, nullptr, false);
  if (request.is_discarded()) return 0;
  (void)vgpu::admin::op_of(request);
  (void)vgpu::admin::field(request, "dry_run", false);
  (void)vgpu::admin::field<std::string>(request, "vm", "");
  const vgpu::policy::Actor admin{0, "root", vgpu::policy::Role::kAdmin, 0};
  const vgpu::admin::OpResult r = vgpu::admin::execute(*store(), admin, request, 1'767'225'600);
  if (!r.answer.is_object() || !r.answer.contains("ok")) __builtin_trap();
  return 0;
}
