#include "vgpu/policy/calendar.h"

#include <algorithm>
#include <cstdio>

#include "civil_time.h"

namespace vgpu::policy {

bool parse_calendar(std::string_view text, Calendar* out) {
  if (text == "day") {
    *out = Calendar::kDay;
  } else if (text == "week") {
    *out = Calendar::kWeek;
  } else if (text == "month") {
    *out = Calendar::kMonth;
  } else {
    return false;
  }
  return true;
}

std::string_view calendar_name(Calendar c) {
  switch (c) {
    case Calendar::kDay:
      return "day";
    case Calendar::kWeek:
      return "week";
    case Calendar::kMonth:
      return "month";
  }
  return "day";
}

Window calendar_period_at(Calendar c, int64_t t, const TimeZone& tz) {
  GpuTime g;
  g.period = c == Calendar::kDay    ? PeriodKind::kDay
             : c == Calendar::kWeek ? PeriodKind::kWeek
                                    : PeriodKind::kMonth;
  return window_at(g, t, tz);
}

std::string calendar_label(Calendar c, int64_t start, const TimeZone& tz) {
  const Civil d = civil_from_unix(tz.local_at(start));
  char buf[32];
  if (c == Calendar::kMonth) {
    std::snprintf(buf, sizeof buf, "%04d-%02d", d.year, d.month);
  } else {
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02d", d.year, d.month, d.day);
  }
  return buf;
}

}  // namespace vgpu::policy
