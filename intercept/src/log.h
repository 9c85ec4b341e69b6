// Logging inside an application's process: one line to stderr, prefixed
// "vgpu:", so users see why a call failed without a debugger.
#pragma once

namespace vgpu::intercept {

void log_line(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// Logs `name` once per process (for calls that keep failing the same way).
void log_once(const char* key, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace vgpu::intercept
