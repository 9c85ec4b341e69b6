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
  const vgpu::Result r = vgpu::daemon::parse_scheduler_config(text, &settings);
  if (!r.ok()) {
    // A refusal always says why, and a file's fault is an invalid argument.
    if (r.message().empty() || !r.is(vgpu::Result::Code::kInvalidArgument)) __builtin_trap();
    return 0;
  }
  // Settings it accepts pass the check vgpud applies before using them.
  if (!vgpu::daemon::check_scheduler_settings(settings).ok()) __builtin_trap();
  (void)vgpu::daemon::describe(settings);
  return 0;
}
