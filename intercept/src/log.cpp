#include "log.h"

#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>

namespace vgpu::intercept {
namespace {

void vlog(const char* fmt, va_list ap) {
  char line[512];
  vsnprintf(line, sizeof line, fmt, ap);
  std::fprintf(stderr, "vgpu: %s\n", line);
}

}  // namespace

void log_line(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(fmt, ap);
  va_end(ap);
}

void log_once(const char* key, const char* fmt, ...) {
  static std::mutex mu;
  static auto* seen = new std::set<std::string>;  // leaked: used until exit
  {
    std::lock_guard lock(mu);
    if (!seen->insert(key).second) return;
  }
  va_list ap;
  va_start(ap, fmt);
  vlog(fmt, ap);
  va_end(ap);
}

}  // namespace vgpu::intercept
