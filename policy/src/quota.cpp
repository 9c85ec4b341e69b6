#include "vgpu/policy/quota.h"

#include <algorithm>
#include <cmath>

#include "civil_time.h"

namespace vgpu::policy {
namespace {

constexpr int64_t kDay = 86400;
constexpr int64_t kWeek = 7 * kDay;
constexpr int64_t kMonday = 4 * kDay;  // 1970-01-05, the first Monday after the epoch

int64_t floor_to(int64_t t, int64_t step, int64_t origin) {
  int64_t q = (t - origin) / step;
  if ((t - origin) % step < 0) --q;  // round toward minus infinity before 1970 too
  return origin + q * step;
}

}  // namespace

Quota resolve_student_quota(const QuotaFields& student, const QuotaFields& course) {
  Quota q;
  if (student.gpu_time)
    q.gpu_time = *student.gpu_time;
  else if (course.gpu_time)
    q.gpu_time = *course.gpu_time;
  q.memory = student.memory.value_or(course.memory.value_or(0));
  q.weight = student.weight.value_or(1);
  q.on_exhaust = student.on_exhaust.value_or(course.on_exhaust.value_or(OnExhaust::kReject));
  q.placement = student.placement ? student.placement : course.placement;
  return q;
}

Quota resolve_default_quota(const QuotaFields& defaults) {
  Quota q;
  if (defaults.gpu_time) q.gpu_time = *defaults.gpu_time;
  q.memory = defaults.memory.value_or(0);
  q.weight = defaults.weight.value_or(1);
  q.on_exhaust = defaults.on_exhaust.value_or(OnExhaust::kBestEffort);
  q.placement = defaults.placement;
  return q;
}

Window window_at(const GpuTime& g, int64_t now) {
  switch (g.period) {
    case PeriodKind::kDay: {
      const int64_t start = floor_to(now, kDay, 0);
      return {start, start + kDay};
    }
    case PeriodKind::kWeek: {
      const int64_t start = floor_to(now, kWeek, kMonday);
      return {start, start + kWeek};
    }
    case PeriodKind::kMonth: {
      const Civil c = civil_from_unix(now);
      const int next_year = c.month == 12 ? c.year + 1 : c.year;
      const int next_month = c.month == 12 ? 1 : c.month + 1;
      return {days_from_civil(c.year, c.month, 1) * kDay,
              days_from_civil(next_year, next_month, 1) * kDay};
    }
    case PeriodKind::kRange:
      return {g.range_start, g.range_end};
  }
  return {};
}

Window window_at(const GpuTime& g, int64_t now, const TimeZone& tz) {
  if (tz.is_utc()) return window_at(g, now);
  if (g.period == PeriodKind::kRange) {
    return {tz.instant_of(g.range_start), tz.instant_of(g.range_end)};
  }
  // The same arithmetic on the wall clock, then back to instants.
  const Window local = window_at(g, tz.local_at(now));
  Window w{tz.instant_of(local.start), tz.instant_of(local.end)};
  // A zone whose clocks go back across midnight could leave `now` just
  // outside; the window always holds the instant it was asked for.
  w.start = std::min(w.start, now);
  w.end = std::max(w.end, now + 1);
  return w;
}

std::optional<int64_t> budget_between(const GpuTime& g, const TimeZone& tz, int64_t start,
                                      int64_t end) {
  if (g.unlimited) return std::nullopt;
  int64_t whole = 0;       // windows the span covers entirely
  long double part = 0.0;  // shares of the ones it covers in part
  for (int64_t t = start; t < end;) {
    const Window w = window_at(g, t, tz);
    const int64_t from = std::max(start, w.start), to = std::min(end, w.end);
    if (w.end > w.start && to > from) {
      if (from == w.start && to == w.end) {
        whole += g.budget_ns;
      } else {
        part += static_cast<long double>(g.budget_ns) * static_cast<long double>(to - from) /
                static_cast<long double>(w.end - w.start);
      }
    }
    if (g.period == PeriodKind::kRange || w.end <= t) break;  // one range; never loop in place
    t = w.end;
  }
  return whole + static_cast<int64_t>(std::llround(part));
}

}  // namespace vgpu::policy
