// libFuzzer target: vgpud's scheduling config file (--config, re-read on
// SIGHUP) on arbitrary bytes. Whatever the file says, the parse answers with
// settings or a reason, never an exception or a crash; settings it accepts
// pass the same check vgpud applies before using them.
#include <cstddef>
#include <cstdint>
#include <string>

#include "scheduler_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  vgpu::daemon::SchedulerSettings settings;
  std::string why;
  if (!ok(vgpu::daemon::parse_scheduler_config(text, &settings, &why))) {
    if (why.empty()) __builtin_trap();  // a refusal always says why
    return 0;
  }
  (void)vgpu::daemon::check_scheduler_settings(settings, &why);
  (void)vgpu::daemon::describe(settings);
  return 0;
}
