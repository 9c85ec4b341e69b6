// Device printf: vprintf(fmt, args) where args is the packed argument buffer nvcc builds (each
// argument at an offset aligned to its size; floats promoted to double, integers to at least 32
// bits). Each conversion is formatted by the C library, so the text matches printf.
#include <cstdio>
#include <cstring>
#include <string>

#include "ptx_exec.h"

namespace vgpu::executor::sim::ptx {

std::string format_printf(const char* fmt, const uint8_t* args) {
  std::string out;
  size_t offset = 0;
  auto next_arg = [&](size_t size) {
    offset = (offset + size - 1) & ~(size - 1);
    uint64_t v = 0;
    if (args) memcpy(&v, args + offset, size);
    offset += size;
    return v;
  };
  const size_t limit = 1 << 16;  // a format string is guest data: bound it
  for (size_t i = 0; fmt[i] && i < limit && out.size() < limit;) {
    if (fmt[i] != '%') { out += fmt[i++]; continue; }
    if (fmt[i + 1] == '%') { out += '%'; i += 2; continue; }
    size_t start = i++;
    std::string spec = "%";
    while (fmt[i] && strchr("-+ #0", fmt[i])) spec += fmt[i++];
    auto number_or_star = [&]() {
      if (fmt[i] == '*') { ++i; spec += std::to_string((int32_t)next_arg(4)); return; }
      while (fmt[i] >= '0' && fmt[i] <= '9') spec += fmt[i++];
    };
    number_or_star();
    if (fmt[i] == '.') { spec += fmt[i++]; number_or_star(); }
    int longs = 0;
    while (fmt[i] && strchr("hlLzjtq", fmt[i])) {
      if (fmt[i] == 'l' || fmt[i] == 'z' || fmt[i] == 'j' || fmt[i] == 't' || fmt[i] == 'q' || fmt[i] == 'L') ++longs;
      ++i;
    }
    char conv = fmt[i];
    if (!conv) { out.append(fmt + start); break; }
    ++i;
    char buf[512];
    int len = 0;
    switch (conv) {
      case 'd': case 'i': case 'u': case 'x': case 'X': case 'o': {
        bool wide = longs > 0;
        uint64_t v = next_arg(wide ? 8 : 4);
        std::string s = spec + "ll" + conv;
        bool is_signed = conv == 'd' || conv == 'i';
        long long x = is_signed ? (wide ? (long long)(int64_t)v : (long long)(int32_t)v) : (long long)(wide ? v : (uint32_t)v);
        len = snprintf(buf, sizeof buf, s.c_str(), x);
        break;
      }
      case 'c': len = snprintf(buf, sizeof buf, (spec + 'c').c_str(), (int)(int32_t)next_arg(4)); break;
      case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A': {
        uint64_t v = next_arg(8);
        double d;
        memcpy(&d, &v, 8);
        len = snprintf(buf, sizeof buf, (spec + conv).c_str(), d);
        break;
      }
      case 'p': len = snprintf(buf, sizeof buf, (spec + 'p').c_str(), reinterpret_cast<void*>(next_arg(8))); break;
      case 's': {
        const char* s = reinterpret_cast<const char*>(next_arg(8));
        std::string str = s ? std::string(s, strnlen(s, limit)) : "(null)";
        len = snprintf(buf, sizeof buf, (spec + 's').c_str(), str.c_str());
        if (len >= (int)sizeof buf) { out += str; len = 0; }
        break;
      }
      default: out.append(fmt + start, i - start); break;
    }
    if (len > 0) out.append(buf, std::min<size_t>(len, sizeof buf - 1));
  }
  return out;
}

}  // namespace vgpu::executor::sim::ptx
