#include "vm_sockets.h"

#include <spdlog/spdlog.h>

#include <filesystem>

namespace vgpu::daemon {

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

Status serve_vms(transport::HostLoop& loop, const std::vector<transport::VmSpec>& vms,
                 std::string* why) {
  for (const auto& vm : vms) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(vm.path).parent_path(), ec);
    if (ec) {
      *why = "cannot create the directory of " + vm.path + ": " + ec.message();
      return Status::kNotPermitted;
    }
    if (Status s = loop.add_vm(vm, why); !ok(s)) {
      *why = "VM " + vm.name + ": " + *why;
      return s;
    }
    spdlog::info("vm {}: {} at {}", vm.name,
                 vm.mode == transport::VmMode::kDoorbell ? "ivshmem-doorbell server"
                                                         : "ivshmem-plain region",
                 vm.path);
  }
  return Status::kSuccess;
}

}  // namespace vgpu::daemon
