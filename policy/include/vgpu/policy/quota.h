// Quotas: what a student (or an unassigned VM) may use, and how the fields
// set at each level combine.
//
// Levels, most specific first: the student's own fields, then their course's
// fields (defaults for each student of the course), then built-in values. A
// VM bound to no student gets the admin's default quota instead. Two fields
// are not inherited that way: a student's weight is their share within the
// course, while a course's weight is the course's share among courses.
#pragma once

#include <cstdint>
#include <optional>

#include "vgpu/policy/time_zone.h"

namespace vgpu::policy {

enum class PeriodKind : uint8_t {
  kDay,    // renews every day at 00:00 (UTC, or the course's time zone)
  kWeek,   // renews every Monday at 00:00 (UTC, or the course's time zone)
  kRange,  // one budget for a fixed range of days; none outside it
  kMonth,  // renews on the 1st of each month at 00:00 (UTC, or the course's time zone)
};

struct GpuTime {
  bool unlimited = true;
  int64_t budget_ns = 0;  // per period
  PeriodKind period = PeriodKind::kWeek;
  int64_t range_start = 0;  // kRange: [range_start, range_end), unix seconds
  int64_t range_end = 0;
  bool operator==(const GpuTime&) const = default;
};

enum class OnExhaust : uint8_t {
  kReject,      // queued work fails with a clear CUDA error
  kWait,        // queued work waits until the period renews or the quota is raised
  kBestEffort,  // work goes on, in the best-effort group (after everyone in budget)
};

// Which of a host's GPUs a VM goes to (host/placement.h); unset at every
// level: the host's policy (vgpud --placement).
enum class Placement : uint8_t {
  kSpread,  // the least committed weight, then the most free memory
  kPack,    // the first GPU its memory cap fits
};

// What one level sets; an unset field inherits.
struct QuotaFields {
  std::optional<GpuTime> gpu_time;
  std::optional<uint64_t> memory;  // bytes; 0: no cap
  std::optional<uint32_t> weight;
  std::optional<OnExhaust> on_exhaust;
  std::optional<Placement> placement;
  bool empty() const { return !gpu_time && !memory && !weight && !on_exhaust && !placement; }
  bool operator==(const QuotaFields&) const = default;
};

// The effective quota of one budget holder.
struct Quota {
  GpuTime gpu_time;  // unlimited unless set
  uint64_t memory = 0;
  uint32_t weight = 1;
  OnExhaust on_exhaust = OnExhaust::kReject;
  std::optional<Placement> placement;  // none: the host's
  bool operator==(const Quota&) const = default;
};

inline constexpr uint32_t kMaxWeight = 10000;

// A student's quota: their fields over their course's over the built-ins
// (unlimited time, no memory cap, weight 1, reject, the host's placement). The course's weight is
// not a student default (it is the course's own share), so it is ignored.
Quota resolve_student_quota(const QuotaFields& student, const QuotaFields& course);
// An unassigned VM's quota: the admin's default over the built-ins
// (unlimited time, no memory cap, weight 1, best-effort).
Quota resolve_default_quota(const QuotaFields& defaults);

// The budget window containing `now`, [start, end) in unix seconds. For a
// range it is the range itself, which may not contain `now`.
struct Window {
  int64_t start = 0;
  int64_t end = 0;
  bool contains(int64_t t) const { return t >= start && t < end; }
  bool operator==(const Window&) const = default;
};
Window window_at(const GpuTime& g, int64_t now);
// The same on the wall clock of `tz`: a day from local midnight to the next
// (23 or 25 hours when clocks change), a week from Monday 00:00 local. A
// range's dates (stored as UTC midnights) are read as that zone's dates.
Window window_at(const GpuTime& g, int64_t now, const TimeZone& tz);

// The budget a quota grants over [start, end): each of its windows there
// counts for the part of it the span covers (a 2h/week quota gives a day
// 2h/7; 90m/day gives a week 10h30m). Rounded to the nanosecond; nullopt
// when the time is unlimited.
std::optional<int64_t> budget_between(const GpuTime& g, const TimeZone& tz, int64_t start,
                                      int64_t end);

}  // namespace vgpu::policy
