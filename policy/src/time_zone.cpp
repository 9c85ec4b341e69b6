#include "vgpu/policy/time_zone.h"

#include <date/tz.h>

#include <cctype>
#include <exception>

namespace vgpu::policy {
namespace {

namespace chr = std::chrono;

// What an IANA name can hold: "Area/Location", "Etc/GMT+5", "UTC". Checked
// before the database is asked, so that no odd bytes reach it.
bool plausible(std::string_view name) {
  if (name.empty() || name.size() > 64 || name.front() == '/' || name.back() == '/') return false;
  if (name.find("..") != std::string_view::npos || name.find("//") != std::string_view::npos) {
    return false;
  }
  for (char c : name) {
    const bool ok =
        std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '_' || c == '-' || c == '+';
    if (!ok) return false;
  }
  return true;
}

std::string unknown(std::string_view name) {
  return "unknown time zone '" + std::string(name) +
         "' (an IANA name such as Europe/Berlin or America/New_York, as in /usr/share/zoneinfo; "
         "default UTC)";
}

}  // namespace

Result TimeZone::find(std::string_view name, TimeZone* out) {
  if (name == "UTC") {
    *out = TimeZone();
    return {};
  }
  if (!plausible(name)) return Result::invalid_argument(unknown(name));
  try {
    const date::time_zone* z = date::locate_zone(name);
    // Load its rules now: a zone that cannot be read is refused here rather
    // than read as UTC later.
    z->get_info(date::sys_seconds{chr::seconds{0}});
    out->zone_ = z;
    out->name_ = std::string(name);
    return {};
  } catch (const std::exception&) {  // date's way to say it has no such zone
    return Result::invalid_argument(unknown(name));
  }
}

TimeZone TimeZone::find_or_utc(std::string_view name) {
  TimeZone z;
  if (!find(name, &z).ok()) return TimeZone();
  return z;
}

int64_t TimeZone::offset_at(int64_t unix_seconds) const {
  if (!zone_) return 0;
  try {
    const date::sys_info i = zone_->get_info(date::sys_seconds{chr::seconds{unix_seconds}});
    return chr::duration_cast<chr::seconds>(i.offset).count();
  } catch (const std::exception&) {
    return 0;  // find() read the zone already; this is not expected
  }
}

int64_t TimeZone::instant_of(int64_t local_seconds) const {
  if (!zone_) return local_seconds;
  try {
    const date::local_seconds local{chr::seconds{local_seconds}};
    const date::local_info i = zone_->get_info(local);
    switch (i.result) {
      case date::local_info::unique:
      case date::local_info::ambiguous:  // the first of the two
        return local_seconds - chr::duration_cast<chr::seconds>(i.first.offset).count();
      case date::local_info::nonexistent:  // the gap ends where the second offset begins
        return chr::duration_cast<chr::seconds>(i.second.begin.time_since_epoch()).count();
    }
  } catch (const std::exception&) {
  }
  return local_seconds;
}

}  // namespace vgpu::policy
