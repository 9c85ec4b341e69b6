#include "qemu_peer.h"

#include <cctype>
#include <fstream>
#include <iterator>

#include "virt_connection.h"

namespace vgpu::virt {

std::string qemu_domain_uuid(int pid) {
  if (pid <= 0) return "";
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  const std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // NUL-separated arguments: ... -uuid\0UUID\0 ...
  size_t at = 0;
  std::string previous;
  while (at < cmdline.size()) {
    size_t end = cmdline.find('\0', at);
    if (end == std::string::npos) end = cmdline.size();
    std::string arg = cmdline.substr(at, end - at);
    if (previous == "-uuid" && looks_like_uuid(arg)) {
      for (char& c : arg) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return arg;
    }
    previous = std::move(arg);
    at = end + 1;
  }
  return "";
}

}  // namespace vgpu::virt
