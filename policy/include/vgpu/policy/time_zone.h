// A course's time zone: an IANA name ("Europe/Berlin") from the system's tz
// database (/usr/share/zoneinfo, Debian's tzdata), read through Howard
// Hinnant's date library (what C++20's std::chrono::locate_zone became; this
// libstdc++ does not have it yet). Quota periods and usage reports of a
// course's students follow its wall clock, daylight-saving changes included.
//
// Cheap to copy; the default is UTC, which needs no database. Thread-safe:
// the database is read once, zones are immutable. Nothing here throws.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "vgpu/result.h"

namespace date {
class time_zone;
}

namespace vgpu::policy {

class TimeZone {
 public:
  TimeZone() = default;  // UTC

  // The zone named `name` ("UTC", "Europe/Berlin", "America/New_York").
  // Invalid argument for a name the database does not know (or no database);
  // `*out` is unchanged then.
  static Result find(std::string_view name, TimeZone* out);
  // find(), or UTC for a name it refuses (a stored name tzdata no longer has).
  static TimeZone find_or_utc(std::string_view name);

  const std::string& name() const { return name_; }
  bool is_utc() const { return zone_ == nullptr; }

  // Seconds east of UTC at the instant `unix_seconds`.
  int64_t offset_at(int64_t unix_seconds) const;
  // The wall-clock time at an instant, as seconds since 1970-01-01 00:00 on
  // that wall clock (what civil_from_unix turns into a date and time).
  int64_t local_at(int64_t unix_seconds) const { return unix_seconds + offset_at(unix_seconds); }
  // The instant a wall-clock time (as local_at gives it) happens: when clocks
  // go back and it happens twice, the first; when clocks skip it (a
  // daylight-saving gap), the instant the gap ends.
  int64_t instant_of(int64_t local_seconds) const;

  bool operator==(const TimeZone& o) const { return zone_ == o.zone_; }

 private:
  std::string name_ = "UTC";
  const date::time_zone* zone_ = nullptr;  // null: UTC
};

}  // namespace vgpu::policy
