// Modules, kernels, device variables and launches.
#include <vector>

#include "vgpu/executor/call_handler.h"
#include "vgpu/fatbin/fatbin.h"

namespace vgpu::executor {

using namespace vgpu::proto;

namespace {


// Device names are mangled C++ identifiers: printable ASCII, no spaces.
bool valid_device_name(std::span<const uint8_t> name) {
  if (name.empty()) return false;
  for (uint8_t c : name) {
    if (c <= ' ' || c > '~') return false;
  }
  return true;
}

std::string_view as_name(std::span<const uint8_t> tail) {
  return {reinterpret_cast<const char*>(tail.data()), tail.size()};
}

}  // namespace

Outcome CallHandler::handle(const vgpu_msg_header&, const ModuleLoadRequest& r,
                            std::span<const uint8_t>) {
  const uint8_t* image = data_range(r.data_offset, r.size);
  if (!image || r.size == 0) return Outcome::failure(Status::kInvalidValue);
  // Parse a private copy: the guest can rewrite its data area at any time.
  const std::vector<uint8_t> copy(image, image + r.size);
  ModuleLoadReply rep{};
  if (Status s = backend_->module_load(caller_->context, copy, &rep.module); !ok(s)) return Outcome::failure(s);
  Outcome o;
  o.set_reply(rep);
  return o;
}

Outcome CallHandler::handle(const vgpu_msg_header& h, const ModuleUnloadRequest& r,
                            std::span<const uint8_t>) {
  return queue(h, kDefaultStream, UnloadModule{r.module});
}

Outcome CallHandler::handle(const vgpu_msg_header&, const FunctionGetRequest& r,
                            std::span<const uint8_t> name) {
  if (!valid_device_name(name)) return Outcome::failure(Status::kInvalidValue);
  FunctionGetReply rep{};
  FunctionInfo info;
  if (Status s = backend_->function_get(caller_->context, r.module, as_name(name), &rep.function, &info);
      !ok(s))
    return Outcome::failure(s);
  rep.param_count = info.param_count;
  rep.param_bytes = info.param_bytes;
  Outcome o;
  o.set_reply(rep);
  return o;
}

Outcome CallHandler::handle(const vgpu_msg_header&, const VarGetRequest& r,
                            std::span<const uint8_t> name) {
  if (!valid_device_name(name)) return Outcome::failure(Status::kInvalidValue);
  VarGetReply rep{};
  if (Status s = backend_->var_get(caller_->context, r.module, as_name(name), r.size, &rep.dptr); !ok(s))
    return Outcome::failure(s);
  Outcome o;
  o.set_reply(rep);
  return o;
}

Outcome CallHandler::handle(const vgpu_msg_header&, const FuncGetAttributesRequest& r,
                            std::span<const uint8_t>) {
  FunctionAttributes a;
  if (Status s = backend_->func_attributes(caller_->context, r.function, &a); !ok(s)) return Outcome::failure(s);
  FuncGetAttributesReply rep{a.shared_size_bytes, a.const_size_bytes, a.local_size_bytes,
                             a.max_threads_per_block, a.num_regs, a.ptx_version, a.binary_version};
  Outcome o;
  o.set_reply(rep);
  return o;
}

Outcome CallHandler::handle(const vgpu_msg_header& h, const LaunchKernelRequest& r,
                            std::span<const uint8_t> params) {
  Launch launch;
  launch.function = r.function;
  for (int i = 0; i < 3; ++i) {
    launch.grid[i] = r.grid[i];
    launch.block[i] = r.block[i];
  }
  launch.shared_mem = r.shared_mem;
  launch.params.assign(params.begin(), params.end());
  if (r.flags & ~kLaunchFlagsKnown) return Outcome::failure(Status::kInvalidValue);
  launch.cooperative = (r.flags & kLaunchCooperative) != 0;
  launch_cluster_dims(r.flags, launch.cluster);
  for (int i = 0; i < 3; ++i) {
    if (r.grid[i] % launch.cluster[i] != 0) return Outcome::failure(Status::kInvalidClusterSize);
  }
  if (!fatbin::valid_cluster(launch.cluster)) return Outcome::failure(Status::kInvalidClusterSize);
  return queue(h, r.stream, std::move(launch));
}

Outcome CallHandler::handle(const vgpu_msg_header&, const DeviceOutputTakeRequest& r,
                            std::span<const uint8_t>) {
  uint8_t* dst = data_range(r.data_offset, r.size);
  if (!dst || r.size == 0) return Outcome::failure(Status::kInvalidValue);
  DeviceOutputTakeReply rep{};
  if (Status s = backend_->take_device_output(caller_->context, static_cast<int>(r.stream), {dst, r.size},
                                              &rep.bytes, &rep.dropped);
      !ok(s))
    return Outcome::failure(s);
  return Outcome::replying(rep);
}

}  // namespace vgpu::executor
