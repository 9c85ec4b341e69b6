// Human units in and out: durations ("90m", "1h30m", "2.5h"), byte sizes
// ("4GiB", "512MiB"), GPU-time budgets ("2h/week", "90m/day",
// "10h/2025-01-06..2025-03-31") and dates ("2025-01-06", "2025-01-06T14:30").
//
// Dates are UTC whatever the host's time zone. Period boundaries are too
// here; a course's own time zone moves them (window_at with a TimeZone). Parsers
// refuse anything they do not fully understand as an invalid argument, the
// message saying why, and leave the output untouched (never a partial value).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vgpu/policy/quota.h"
#include "vgpu/result.h"

namespace vgpu::policy {

// "90m", "1h30m", "2.5h", "500ms", "45s", "1d", "1w". At least 0; no sign.
Result parse_duration(std::string_view text, int64_t* ns);
// "4GiB", "512MiB", "1.5GiB", "4GB" (decimal), "4096" (bytes). No sign.
Result parse_bytes(std::string_view text, uint64_t* bytes);
// "2h/week", "90m/day", "10h/2025-01-06..2025-03-31" (the range includes both
// days), or "unlimited".
Result parse_gpu_time(std::string_view text, GpuTime* out);
// "2025-01-06" (00:00 UTC), "2025-01-06T14:30[:05]" (UTC), or "now".
// With `end_of_day`, a bare date means the end of that day (for --until).
Result parse_date(std::string_view text, bool end_of_day, int64_t now, int64_t* unix_seconds);
Result parse_on_exhaust(std::string_view text, OnExhaust* out);

std::string format_duration(int64_t ns);        // "2h", "1h30m", "12.5s", "850ms", "0s"
std::string format_bytes(uint64_t bytes);       // "4GiB", "1.5GiB", "512MiB", "100B"
std::string format_gpu_time(const GpuTime& g);  // "2h/week", "unlimited"
std::string format_date(int64_t unix_seconds);  // "2025-01-06"
std::string format_time(int64_t unix_seconds);  // "2025-01-06 14:30:05"
std::string_view on_exhaust_name(OnExhaust e);  // "reject", "wait", "best-effort"
// "spread" or "pack"; invalid argument (naming both) for anything else, and
// `*out` unchanged.
Result parse_placement(std::string_view text, Placement* out);
std::string_view placement_name(Placement p);

}  // namespace vgpu::policy
