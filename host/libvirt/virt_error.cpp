#include "virt_error.h"

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <libxml/parser.h>

#include <mutex>

namespace vgpu::virt {
namespace {

void ignore_error(void*, virErrorPtr) {}

}  // namespace

void init_libvirt() {
  static std::once_flag once;
  std::call_once(once, [] {
    xmlInitParser();
    virInitialize();
    virSetErrorFunc(nullptr, ignore_error);
  });
}

std::string last_error(std::string_view fallback) {
  const virError* e = virGetLastError();
  std::string out = e && e->message ? e->message : std::string(fallback);
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

int last_error_code() {
  const virError* e = virGetLastError();
  return e ? e->code : 0;
}

}  // namespace vgpu::virt
