#include "vgpu/host/vm_sockets.h"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "vgpu/transport/unix_socket.h"

namespace vgpu::host {

std::string vm_dir(const std::string& runtime_dir) { return runtime_dir + "/vms"; }

transport::VmSpec vm_spec(const std::string& runtime_dir, const std::string& name,
                          transport::VmMode mode) {
  transport::VmSpec vm;
  vm.name = name;
  vm.mode = mode;
  vm.path = vm_dir(runtime_dir) + "/" + name +
            (mode == transport::VmMode::kDoorbell ? ".sock" : ".shm");
  return vm;
}

Result serve_vms(transport::HostLoop& loop, const std::vector<transport::VmSpec>& vms, int gid) {
  for (const auto& vm : vms) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(vm.path).parent_path(), ec);
    if (ec)
      return Result::unavailable("cannot create the directory of " + vm.path + ": " + ec.message());
    if (const Result r = loop.add_vm(vm); !r.ok()) return r.prefixed("VM " + vm.name + ": ");
    if (!transport::set_group_no_follow(vm.path, gid)) {
      spdlog::warn("vm {}: cannot give {} to group {}: {}", vm.name, vm.path, gid,
                   std::strerror(errno));
    }
    spdlog::info("vm {}: {} at {}", vm.name,
                 vm.mode == transport::VmMode::kDoorbell ? "ivshmem-doorbell server"
                                                         : "ivshmem-plain region",
                 vm.path);
  }
  return {};
}

VmHooks vm_hooks(transport::HostLoop* loop, scheduler::DispatcherGroup* dispatcher,
                 const std::string& runtime_dir, int gid) {
  VmHooks h;
  h.serve = [=](const std::string& vm) {
    if (loop->serves(vm)) return Result();
    return serve_vms(*loop, {vm_spec(runtime_dir, vm, transport::VmMode::kDoorbell)}, gid);
  };
  h.unserve = [=](const std::string& vm) { loop->remove_vm(vm); };
  h.release = [=](const std::string& vm, int pid) { loop->disconnect_vm(vm, pid); };
  h.expect_replug = [=](const std::string& vm) { loop->expect_replug(vm); };
  h.socket_path = [=](const std::string& vm) {
    return vm_spec(runtime_dir, vm, transport::VmMode::kDoorbell).path;
  };
  h.gpu_ns = [=](policy::TenantId tenant) -> uint64_t {
    const auto all = dispatcher->usage_all();
    auto it = all.find(tenant);
    return it == all.end() ? 0 : it->second.gpu_ns;
  };
  return h;
}

}  // namespace vgpu::host
