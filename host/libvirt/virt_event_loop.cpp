#include "virt_event_loop.h"

#include <libvirt/libvirt.h>

#include <mutex>
#include <thread>

#include "virt_error.h"

namespace vgpu::virt {

void ensure_event_loop() {
  static std::once_flag once;
  std::call_once(once, [] {
    init_libvirt();
    virEventRegisterDefaultImpl();
    std::thread([] {
      for (;;) virEventRunDefaultImpl();
    }).detach();
  });
}

}  // namespace vgpu::virt
