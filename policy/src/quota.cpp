#include "vgpu/policy/quota.h"

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
  return q;
}

Quota resolve_default_quota(const QuotaFields& defaults) {
  Quota q;
  if (defaults.gpu_time) q.gpu_time = *defaults.gpu_time;
  q.memory = defaults.memory.value_or(0);
  q.weight = defaults.weight.value_or(1);
  q.on_exhaust = defaults.on_exhaust.value_or(OnExhaust::kBestEffort);
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
    case PeriodKind::kRange:
      return {g.range_start, g.range_end};
  }
  return {};
}

}  // namespace vgpu::policy
