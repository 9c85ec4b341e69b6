#include "processes.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <system_error>

namespace vgpu::smi {

namespace fs = std::filesystem;

namespace {

// The client id the guest module shows for an open /dev/vgpu file (0: none).
uint32_t fd_client(const fs::path& fdinfo) {
  std::ifstream in(fdinfo);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("vgpu-client:")) return static_cast<uint32_t>(std::strtoul(line.c_str() + 12, nullptr, 10));
  }
  return 0;
}

// Whether the process has /dev/vgpu open; the files' client ids in `clients`.
bool has_device_open(const fs::path& proc, std::vector<uint32_t>* clients) {
  std::error_code ec;
  bool open = false;
  for (const auto& fd : fs::directory_iterator(proc / "fd", ec)) {
    std::error_code link_ec;
    if (fs::read_symlink(fd.path(), link_ec) != "/dev/vgpu") continue;
    open = true;
    if (const uint32_t client = fd_client(proc / "fdinfo" / fd.path().filename())) clients->push_back(client);
  }
  return open;
}

bool maps_driver(const fs::path& maps) {
  std::ifstream in(maps);
  std::string line;
  while (std::getline(in, line)) {
    if (std::string_view(line).ends_with("/libcuda.so.1")) return true;
  }
  return false;
}

// Whether the process's environment holds every one of `want` ("NAME=value").
bool environment_has(const fs::path& environ, const std::vector<std::string>& want) {
  std::ifstream in(environ, std::ios::binary);
  std::vector<bool> seen(want.size());
  std::string var;
  while (std::getline(in, var, '\0')) {
    for (size_t i = 0; i < want.size(); ++i) seen[i] = seen[i] || var == want[i];
  }
  return std::all_of(seen.begin(), seen.end(), [](bool b) { return b; });
}

}  // namespace

std::vector<GpuProcess> gpu_processes(const std::string& proc_root, pid_t self) {
  // A simulated VM's programs are this host's processes started by vgpu-run
  // for the same VM and daemon: those of other VMs are not this VM's.
  std::vector<std::string> same_vm;
  for (const char* name : {"VGPU_VM", "VGPU_RUNTIME_DIR"}) {
    if (const char* v = std::getenv(name)) same_vm.push_back(std::string(name) + "=" + v);
  }
  std::vector<GpuProcess> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(proc_root, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    const pid_t pid = static_cast<pid_t>(std::atol(name.c_str()));
    if (pid == self) continue;
    GpuProcess p;
    if (!has_device_open(entry.path(), &p.clients) && !maps_driver(entry.path() / "maps")) continue;
    if (!same_vm.empty() && !environment_has(entry.path() / "environ", same_vm)) continue;
    p.pid = pid;
    std::ifstream comm(entry.path() / "comm");
    std::getline(comm, p.name);
    out.push_back(std::move(p));
  }
  std::sort(out.begin(), out.end(), [](const GpuProcess& a, const GpuProcess& b) { return a.pid < b.pid; });
  return out;
}

}  // namespace vgpu::smi
