#include "vgpu/policy/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>

#include "civil_time.h"

namespace vgpu::policy {
namespace {

constexpr int64_t kNsPerSecond = 1000000000;
constexpr int64_t kMaxNs = int64_t{100} * 366 * 86400 * kNsPerSecond;  // a century

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A decimal number at the front of `s`: integer digits, then optionally '.'
// and more digits. Advances `s` past it. The value is whole + frac/10^digits.
struct Decimal {
  uint64_t whole = 0;
  uint64_t frac = 0;
  uint64_t scale = 1;  // 10^fraction digits
};

bool take_decimal(std::string_view* s, Decimal* d) {
  size_t i = 0;
  bool digits = false;
  while (i < s->size() && std::isdigit(static_cast<unsigned char>((*s)[i]))) {
    if (d->whole > (UINT64_MAX - 9) / 10) return false;
    d->whole = d->whole * 10 + static_cast<uint64_t>((*s)[i] - '0');
    digits = true;
    ++i;
  }
  if (i < s->size() && (*s)[i] == '.') {
    ++i;
    while (i < s->size() && std::isdigit(static_cast<unsigned char>((*s)[i]))) {
      if (d->scale < 1000000000000ULL) {  // digits past 12 decimals do not matter here
        d->frac = d->frac * 10 + static_cast<uint64_t>((*s)[i] - '0');
        d->scale *= 10;
      }
      digits = true;
      ++i;
    }
  }
  s->remove_prefix(i);
  return digits;
}

// whole*unit + frac*unit/scale, or false past `limit`.
bool scale_by(const Decimal& d, uint64_t unit, uint64_t limit, uint64_t* out) {
  uint64_t whole = 0;
  if (__builtin_mul_overflow(d.whole, unit, &whole)) return false;
  // The fraction is below one unit, so long double keeps it exact enough.
  const auto frac = static_cast<uint64_t>(
      std::llround(static_cast<long double>(d.frac) * static_cast<long double>(unit) /
                   static_cast<long double>(d.scale)));
  if (whole > limit || frac > limit - whole) return false;
  *out = whole + frac;
  return true;
}

std::string trim_number(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s(buf);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

bool take_int(std::string_view* s, size_t digits, int* out) {
  if (s->size() < digits) return false;
  int v = 0;
  for (size_t i = 0; i < digits; ++i) {
    const char c = (*s)[i];
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + (c - '0');
  }
  s->remove_prefix(digits);
  *out = v;
  return true;
}

bool take_char(std::string_view* s, char c) {
  if (s->empty() || s->front() != c) return false;
  s->remove_prefix(1);
  return true;
}

}  // namespace

Result parse_duration(std::string_view text, int64_t* ns) {
  const std::string quoted = "'" + std::string(text) + "'";
  if (text.empty()) {
    return Result::invalid_argument("empty duration (examples: 90m, 2h, 1h30m, 45s)");
  }
  if (text.front() == '-') {
    return Result::invalid_argument("a duration cannot be negative: " + quoted);
  }
  std::string_view s = text;
  uint64_t total = 0;
  while (!s.empty()) {
    Decimal d;
    if (!take_decimal(&s, &d)) {
      return Result::invalid_argument("not a duration: " + quoted +
                                      " (examples: 90m, 2h, 1h30m, 45s)");
    }
    size_t n = 0;
    while (n < s.size() && std::isalpha(static_cast<unsigned char>(s[n]))) ++n;
    const std::string unit = lower(s.substr(0, n));
    s.remove_prefix(n);
    uint64_t per = 0;
    if (unit == "ms")
      per = 1000000;
    else if (unit == "s" || unit == "sec")
      per = kNsPerSecond;
    else if (unit == "m" || unit == "min")
      per = 60 * kNsPerSecond;
    else if (unit == "h")
      per = 3600 * kNsPerSecond;
    else if (unit == "d")
      per = 86400 * kNsPerSecond;
    else if (unit == "w")
      per = 7 * 86400 * kNsPerSecond;
    else {
      return Result::invalid_argument("not a duration: " + quoted +
                                      " (units: ms, s, m, h, d, w; e.g. 90m or 1h30m)");
    }
    uint64_t part = 0;
    if (!scale_by(d, per, kMaxNs, &part) || total + part > static_cast<uint64_t>(kMaxNs)) {
      return Result::invalid_argument("duration too long: " + quoted);
    }
    total += part;
  }
  *ns = static_cast<int64_t>(total);
  return {};
}

Result parse_bytes(std::string_view text, uint64_t* bytes) {
  const std::string quoted = "'" + std::string(text) + "'";
  if (!text.empty() && text.front() == '-') {
    return Result::invalid_argument("a size cannot be negative: " + quoted);
  }
  std::string_view s = text;
  Decimal d;
  if (!take_decimal(&s, &d)) {
    return Result::invalid_argument("not a size: " + quoted + " (examples: 4GiB, 512MiB, 1.5GiB)");
  }
  const std::string unit = lower(s);
  uint64_t per = 0;
  if (unit.empty() || unit == "b")
    per = 1;
  else if (unit == "k" || unit == "kib")
    per = uint64_t{1} << 10;
  else if (unit == "m" || unit == "mib")
    per = uint64_t{1} << 20;
  else if (unit == "g" || unit == "gib")
    per = uint64_t{1} << 30;
  else if (unit == "t" || unit == "tib")
    per = uint64_t{1} << 40;
  else if (unit == "kb")
    per = 1000;
  else if (unit == "mb")
    per = 1000000;
  else if (unit == "gb")
    per = 1000000000;
  else if (unit == "tb")
    per = 1000000000000;
  else {
    return Result::invalid_argument("not a size: " + quoted +
                                    " (units: B, KiB, MiB, GiB, TiB, or kB, MB, GB, TB)");
  }
  if (!scale_by(d, per, uint64_t{1} << 60, bytes)) {
    return Result::invalid_argument("size too large: " + quoted);
  }
  return {};
}

Result parse_date(std::string_view text, bool end_of_day, int64_t now, int64_t* out) {
  const std::string quoted = "'" + std::string(text) + "'";
  if (text == "now") {
    *out = now;
    return {};
  }
  std::string_view s = text;
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
  bool ok = take_int(&s, 4, &y) && take_char(&s, '-') && take_int(&s, 2, &mo) &&
            take_char(&s, '-') && take_int(&s, 2, &d);
  bool has_time = false;
  if (ok && !s.empty()) {
    has_time = true;
    ok = (take_char(&s, 'T') || take_char(&s, ' ')) && take_int(&s, 2, &h) && take_char(&s, ':') &&
         take_int(&s, 2, &mi);
    if (ok && !s.empty()) ok = take_char(&s, ':') && take_int(&s, 2, &sec);
    if (ok && !s.empty()) ok = take_char(&s, 'Z') && s.empty();
  }
  if (!ok) {
    return Result::invalid_argument("not a date: " + quoted +
                                    " (YYYY-MM-DD or YYYY-MM-DDTHH:MM, UTC)");
  }
  if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 ||
      mi > 59 || sec > 59) {
    return Result::invalid_argument("no such date: " + quoted);
  }
  int64_t t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
  if (end_of_day && !has_time) t += 86400;
  *out = t;
  return {};
}

Result parse_gpu_time(std::string_view text, GpuTime* out) {
  const std::string quoted = "'" + std::string(text) + "'";
  if (text == "unlimited") {
    *out = GpuTime{};
    return {};
  }
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) {
    return Result::invalid_argument(
        "not a GPU-time budget: " + quoted +
        " (examples: 2h/week, 90m/day, 20h/month, 10h/2025-01-06..2025-03-31, unlimited)");
  }
  GpuTime g;
  g.unlimited = false;
  if (Result r = parse_duration(text.substr(0, slash), &g.budget_ns); !r.ok())
    return r.prefixed("not a GPU-time budget: " + quoted + ": ");
  const std::string_view period = text.substr(slash + 1);
  if (period == "day") {
    g.period = PeriodKind::kDay;
  } else if (period == "week") {
    g.period = PeriodKind::kWeek;
  } else if (period == "month") {
    g.period = PeriodKind::kMonth;
  } else if (const size_t dots = period.find(".."); dots != std::string_view::npos) {
    g.period = PeriodKind::kRange;
    Result r = parse_date(period.substr(0, dots), false, 0, &g.range_start);
    if (r.ok()) r = parse_date(period.substr(dots + 2), true, 0, &g.range_end);
    if (!r.ok()) return r.prefixed("not a GPU-time budget: " + quoted + ": ");
    if (g.range_end <= g.range_start) {
      return Result::invalid_argument("not a GPU-time budget: " + quoted +
                                      ": the range ends before it starts");
    }
  } else {
    return Result::invalid_argument(
        "not a GPU-time budget: " + quoted +
        " (the period is day, week, or FIRST..LAST dates, e.g. 2025-01-06..2025-03-31)");
  }
  *out = g;
  return {};
}

Result parse_on_exhaust(std::string_view text, OnExhaust* out) {
  if (text == "reject")
    *out = OnExhaust::kReject;
  else if (text == "wait")
    *out = OnExhaust::kWait;
  else if (text == "best-effort")
    *out = OnExhaust::kBestEffort;
  else {
    return Result::invalid_argument("--on-exhaust must be reject, wait or best-effort, not '" +
                                    std::string(text) + "'");
  }
  return {};
}

std::string format_duration(int64_t ns) {
  if (ns < 0) return "-" + format_duration(-ns);
  if (ns == 0) return "0s";
  constexpr int64_t kMinute = 60 * kNsPerSecond, kHour = 60 * kMinute;
  if (ns < kNsPerSecond) {
    if (ns < 1000000) return trim_number(static_cast<double>(ns) / 1e3, 1) + "us";
    return trim_number(static_cast<double>(ns) / 1e6, 1) + "ms";
  }
  if (ns < kMinute) return trim_number(static_cast<double>(ns) / 1e9, 1) + "s";
  // Round first, so that 59.97 s never shows as "60s": to the second from an
  // hour on, else to a tenth of a second.
  const int64_t step = ns >= kHour ? kNsPerSecond : kNsPerSecond / 10;
  ns = (ns + step / 2) / step * step;
  std::string out;
  const int64_t h = ns / kHour, m = ns % kHour / kMinute, rest = ns % kMinute;
  if (h) out += std::to_string(h) + "h";
  if (m) out += std::to_string(m) + "m";
  // Seconds to one decimal; below 0.05 s they round away.
  const std::string sec = trim_number(static_cast<double>(rest) / 1e9, 1);
  if (sec != "0") out += sec + "s";
  return out;
}

std::string format_bytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024 && unit < 5) {
    v /= 1024;
    ++unit;
  }
  return trim_number(v, unit == 0 ? 0 : 2) + kUnits[unit];
}

std::string format_date(int64_t t) {
  const Civil c = civil_from_unix(t);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d", c.year, c.month, c.day);
  return buf;
}

std::string format_time(int64_t t) {
  const Civil c = civil_from_unix(t);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d", c.year, c.month, c.day, c.hour,
                c.minute, c.second);
  return buf;
}

std::string format_gpu_time(const GpuTime& g) {
  if (g.unlimited) return "unlimited";
  std::string out = format_duration(g.budget_ns) + "/";
  switch (g.period) {
    case PeriodKind::kDay:
      return out + "day";
    case PeriodKind::kWeek:
      return out + "week";
    case PeriodKind::kMonth:
      return out + "month";
    case PeriodKind::kRange:
      // The range ends at 00:00 after its last day; show the last day.
      return out + format_date(g.range_start) + ".." + format_date(g.range_end - 1);
  }
  return out;
}

Result parse_placement(std::string_view text, Placement* out) {
  if (text == "spread") {
    *out = Placement::kSpread;
  } else if (text == "pack") {
    *out = Placement::kPack;
  } else {
    return Result::invalid_argument("placement must be spread or pack, not '" + std::string(text) +
                                    "'");
  }
  return {};
}

std::string_view placement_name(Placement p) { return p == Placement::kPack ? "pack" : "spread"; }

std::string_view on_exhaust_name(OnExhaust e) {
  switch (e) {
    case OnExhaust::kReject:
      return "reject";
    case OnExhaust::kWait:
      return "wait";
    case OnExhaust::kBestEffort:
      return "best-effort";
  }
  return "reject";
}

}  // namespace vgpu::policy
