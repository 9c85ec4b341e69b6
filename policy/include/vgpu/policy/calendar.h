// Calendar periods on a time zone's wall clock, for usage reports by day,
// week or month: a day from local midnight to the next (23 or 25 hours when
// clocks change), a week from Monday 00:00, a month from the 1st at 00:00.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "vgpu/policy/quota.h"
#include "vgpu/policy/time_zone.h"

namespace vgpu::policy {

enum class Calendar : uint8_t { kDay, kWeek, kMonth };

// "day", "week", "month"; false for anything else.
bool parse_calendar(std::string_view text, Calendar* out);
std::string_view calendar_name(Calendar c);

// The period holding the instant `t`, [start, end) in unix seconds.
Window calendar_period_at(Calendar c, int64_t t, const TimeZone& tz);
// The period starting at `start` as people name it on that wall clock:
// "2025-03-31" (a day; a week by its Monday), "2025-03" (a month).
std::string calendar_label(Calendar c, int64_t start, const TimeZone& tz);

}  // namespace vgpu::policy
