// Time zones from the system's tz database: quota windows, report periods
// and prorated budgets on a course's wall clock, across daylight-saving changes.
#include "vgpu/policy/time_zone.h"

#include <catch2/catch.hpp>

#include "vgpu/policy/budget_book.h"
#include "vgpu/policy/calendar.h"
#include "vgpu/policy/quota.h"

#include "gpu_time.h"

using namespace vgpu::policy;
using vgpu::policy::test::per;

namespace {

constexpr int64_t kHour = 3600;
constexpr int64_t kNsPerHour = 3600LL * 1000000000;
// Midnights in Europe/Berlin, 2025 (CET +1; CEST +2 from 2025-03-30 02:00
// until 2025-10-26 03:00), as unix seconds.
constexpr int64_t kMar01 = 1740783600;  // Sat
constexpr int64_t kMar24 = 1742770800;  // Mon
constexpr int64_t kMar29 = 1743202800;
constexpr int64_t kMar30 = 1743289200;  // clocks go forward: a 23-hour day
constexpr int64_t kMar31 = 1743372000;  // Mon
constexpr int64_t kApr01 = 1743458400;
constexpr int64_t kOct20 = 1760911200;  // Mon
constexpr int64_t kOct26 = 1761429600;  // clocks go back: a 25-hour day
constexpr int64_t kOct27 = 1761519600;  // Mon

TimeZone zone(const char* name) {
  TimeZone z;
  INFO(name);
  REQUIRE(TimeZone::find(name, &z).ok());
  return z;
}

}  // namespace

TEST_CASE("time zones: IANA names from the tz database, anything else refused") {
  TimeZone z;
  CHECK(TimeZone::find("UTC", &z).ok());
  CHECK(z.is_utc());
  CHECK(z.name() == "UTC");
  REQUIRE(TimeZone::find("Europe/Berlin", &z).ok());
  CHECK(z.name() == "Europe/Berlin");
  CHECK_FALSE(z.is_utc());
  for (const char* bad : {"Mars/Olympus", "", "europe/berlin", "../../etc/passwd",
                          "/usr/share/zoneinfo/UTC", "Europe/Berlin\n", "Europe//Berlin"}) {
    INFO(bad);
    TimeZone other;
    const vgpu::Result r = TimeZone::find(bad, &other);
    CHECK(r.is(vgpu::Result::Code::kInvalidArgument));
    CHECK_THAT(r.message(), Catch::Contains("unknown time zone"));
    CHECK(other.is_utc());  // left as it was
  }
  CHECK(TimeZone::find_or_utc("Mars/Olympus").is_utc());
  CHECK(TimeZone::find_or_utc("Asia/Tokyo").name() == "Asia/Tokyo");
}

TEST_CASE("time zones: offsets and wall clock across Berlin's daylight-saving changes") {
  const TimeZone berlin = zone("Europe/Berlin");
  CHECK(berlin.offset_at(kMar30) == kHour);                  // CET
  CHECK(berlin.offset_at(kMar30 + 2 * kHour) == 2 * kHour);  // 03:00 CEST
  CHECK(berlin.offset_at(kOct26) == 2 * kHour);
  CHECK(berlin.offset_at(kOct26 + 3 * kHour) == kHour);
  // Local midnight is an instant and back.
  CHECK(berlin.local_at(kMar30) % 86400 == 0);
  CHECK(berlin.instant_of(berlin.local_at(kMar30)) == kMar30);
  // 02:30 on 2025-03-30 does not happen: it is the instant the gap ends (01:00 UTC).
  const int64_t local_midnight = berlin.local_at(kMar30);
  CHECK(berlin.instant_of(local_midnight + 2 * kHour + 1800) == kMar30 + 2 * kHour);
  // 02:30 on 2025-10-26 happens twice: the first (00:30 UTC).
  const int64_t oct_midnight = berlin.local_at(kOct26);
  CHECK(berlin.instant_of(oct_midnight + 2 * kHour + 1800) == kOct26 + 2 * kHour + 1800);
}

TEST_CASE("quota windows: a Berlin course's days and weeks follow its wall clock") {
  const TimeZone berlin = zone("Europe/Berlin");
  const GpuTime day = per(1, PeriodKind::kDay), week = per(1, PeriodKind::kWeek);
  // The day clocks go forward lasts 23 hours, the day they go back 25.
  CHECK(window_at(day, kMar30 + 5, berlin) == Window{kMar30, kMar31});
  CHECK(kMar31 - kMar30 == 23 * kHour);
  CHECK(window_at(day, kMar30 - 1, berlin) == Window{kMar29, kMar30});
  CHECK(window_at(day, kOct26 + 24 * kHour, berlin) == Window{kOct26, kOct27});
  CHECK(kOct27 - kOct26 == 25 * kHour);
  // In UTC the same instant is still 2025-03-29.
  CHECK(window_at(day, kMar30 + 5).start == kMar30 + kHour - 86400);
  // Weeks from Monday 00:00 local: 167 and 169 hours around the changes.
  CHECK(window_at(week, kMar30, berlin) == Window{kMar24, kMar31});
  CHECK(window_at(week, kMar31, berlin) == Window{kMar31, kMar31 + 7 * 86400});
  CHECK(window_at(week, kOct26, berlin) == Window{kOct20, kOct27});
  CHECK(kOct27 - kOct20 == 169 * kHour);
  // A range's dates are the zone's: 2025-03-24..2025-03-30 (stored as UTC midnights).
  GpuTime range = per(1, PeriodKind::kRange);
  range.range_start = 1742774400;  // 2025-03-24 00:00 UTC
  range.range_end = 1743379200;    // 2025-03-31 00:00 UTC
  CHECK(window_at(range, 0, berlin) == Window{kMar24, kMar31});
  CHECK(window_at(range, 0) == Window{range.range_start, range.range_end});
}

TEST_CASE("quota windows: months renew on the 1st at midnight with 28 to 31 days") {
  const GpuTime month = per(1, PeriodKind::kMonth);
  // UTC: 2024-02 (a leap February), 2024-12 into 2025-01.
  constexpr int64_t kFeb01_2024 = 1706745600, kMar01_2024 = 1709251200;
  constexpr int64_t kDec01_2024 = 1733011200, kJan01_2025 = 1735689600;
  CHECK(window_at(month, kFeb01_2024) == Window{kFeb01_2024, kMar01_2024});
  CHECK(window_at(month, kMar01_2024 - 1) == Window{kFeb01_2024, kMar01_2024});
  CHECK(kMar01_2024 - kFeb01_2024 == 29 * 86400);
  CHECK(window_at(month, kJan01_2025 - 1) == Window{kDec01_2024, kJan01_2025});
  CHECK(window_at(month, kJan01_2025).start == kJan01_2025);
  CHECK(window_at(month, kJan01_2025).end - kJan01_2025 == 31 * 86400);
  // Berlin: March 2025 begins at its midnight and holds the 23-hour day.
  const TimeZone berlin = zone("Europe/Berlin");
  CHECK(window_at(month, kMar30, berlin) == Window{kMar01, kApr01});
  CHECK(kApr01 - kMar01 == 31 * 86400 - kHour);
  // 2025-03-31 22:30 UTC is 2025-04-01 00:30 in Berlin: April there, March in UTC.
  CHECK(window_at(month, kApr01 + 1800, berlin).start == kApr01);
  CHECK(window_at(month, kApr01 + 1800).start == kMar01 + kHour);  // UTC's 2025-03-01
  // The report calendar's months are the same windows.
  CHECK(calendar_period_at(Calendar::kMonth, kMar30, berlin) == window_at(month, kMar30, berlin));
  // A monthly budget over a whole month and over half of one.
  const GpuTime twenty = per(20 * kNsPerHour, PeriodKind::kMonth);
  CHECK(budget_between(twenty, berlin, kMar01, kApr01) == std::optional<int64_t>(20 * kNsPerHour));
}

TEST_CASE("quota windows: a midnight that does not happen starts the day when it ends") {
  // Cuba moves its clocks from 00:00 to 01:00 (2025-03-09).
  const TimeZone havana = zone("America/Havana");
  const int64_t mar09_1am = 1741496400, mar10 = 1741579200;
  const Window w = window_at(per(1, PeriodKind::kDay), mar09_1am + 10, havana);
  CHECK(w == Window{mar09_1am, mar10});
}

TEST_CASE("budgets renew at the course's midnight, 23 hours apart when clocks go forward") {
  const TimeZone berlin = zone("Europe/Berlin");
  BudgetBook book([](const Holder&, const Window&) { return int64_t{0}; });
  const Holder h{1, 0};
  book.configure(h, per(kNsPerHour, PeriodKind::kDay), kMar30 - 1800, berlin);
  auto r = book.reserve(h, kNsPerHour, kMar30 - 1800);
  REQUIRE(r.granted);
  book.settle(h, r.ns, kNsPerHour, kMar30 - 1800);
  // 23:59:59 local: spent; at 00:00 local (23:00 UTC) it renews.
  CHECK_FALSE(book.reserve(h, 1, kMar30 - 1).granted);
  r = book.reserve(h, kNsPerHour, kMar30);
  REQUIRE(r.granted);
  book.settle(h, r.ns, kNsPerHour, kMar30);
  CHECK(book.state(h, kMar30).window == Window{kMar30, kMar31});
  // That day has 23 hours: the next budget comes at 22:00 UTC.
  CHECK_FALSE(book.reserve(h, 1, kMar31 - 1).granted);
  CHECK(book.reserve(h, 1, kMar31).granted);
  CHECK(kMar31 % 86400 == 22 * kHour);
}

TEST_CASE("a holder whose zone changes reads its new window's use from the ledger") {
  int64_t asked_start = 0;
  BudgetBook book([&](const Holder&, const Window& w) {
    asked_start = w.start;
    return int64_t{7};
  });
  const Holder h{1, 0};
  const int64_t now = kMar29 + 12 * kHour;
  book.configure(h, per(kNsPerHour, PeriodKind::kDay), now);
  CHECK(asked_start == kMar29 + kHour);  // 2025-03-29 00:00 UTC
  book.configure(h, per(kNsPerHour, PeriodKind::kDay), now, zone("Europe/Berlin"));
  CHECK(asked_start == kMar29);
  CHECK(book.state(h, now).window == Window{kMar29, kMar30});
}

TEST_CASE("report periods: days, weeks and months on the wall clock, with their labels") {
  const TimeZone berlin = zone("Europe/Berlin");
  CHECK(calendar_period_at(Calendar::kDay, kMar30 + 1, berlin) == Window{kMar30, kMar31});
  CHECK(calendar_period_at(Calendar::kWeek, kMar30, berlin) == Window{kMar24, kMar31});
  CHECK(calendar_period_at(Calendar::kMonth, kMar30, berlin) == Window{kMar01, kApr01});
  CHECK(calendar_period_at(Calendar::kMonth, kApr01 - 1, berlin) == Window{kMar01, kApr01});
  CHECK(calendar_label(Calendar::kDay, kMar30, berlin) == "2025-03-30");
  CHECK(calendar_label(Calendar::kWeek, kMar24, berlin) == "2025-03-24");
  CHECK(calendar_label(Calendar::kMonth, kMar01, berlin) == "2025-03");
  // In UTC, Berlin's midnight is still the day before.
  CHECK(calendar_label(Calendar::kDay, kMar30, TimeZone()) == "2025-03-29");
  // December rolls into the next year.
  const TimeZone utc;
  const int64_t dec15 = 1765756800;  // 2025-12-15 00:00 UTC
  CHECK(calendar_period_at(Calendar::kMonth, dec15, utc) == Window{1764547200, 1767225600});
  Calendar c = Calendar::kDay;
  CHECK(parse_calendar("month", &c));
  CHECK(c == Calendar::kMonth);
  CHECK_FALSE(parse_calendar("year", &c));
}

TEST_CASE("budgets over a span: whole windows count whole, parts their share") {
  const TimeZone berlin = zone("Europe/Berlin");
  const GpuTime weekly = per(2 * kNsPerHour, PeriodKind::kWeek);
  const GpuTime daily = per(kNsPerHour * 3 / 2, PeriodKind::kDay);
  CHECK(budget_between(weekly, berlin, kMar24, kMar31) == 2 * kNsPerHour);
  // The 23-hour Sunday is 23/167 of its week.
  CHECK(budget_between(weekly, berlin, kMar30, kMar31) == (2 * kNsPerHour * 23 + 83) / 167);
  CHECK(budget_between(daily, berlin, kMar24, kMar31) == 7 * kNsPerHour * 3 / 2);
  CHECK(budget_between(daily, berlin, kMar30, kMar30 + 23 * kHour) == kNsPerHour * 3 / 2);
  // Half of a day's window (11.5 of its 23 hours).
  CHECK(budget_between(daily, berlin, kMar30, kMar30 + 23 * 1800) == kNsPerHour * 3 / 4);
  // A month of days: 31 budgets.
  CHECK(budget_between(daily, berlin, kMar01, kApr01) == 31 * kNsPerHour * 3 / 2);
  CHECK_FALSE(budget_between(GpuTime{}, berlin, kMar01, kApr01).has_value());
  GpuTime range = per(10 * kNsPerHour, PeriodKind::kRange);
  range.range_start = 1742774400;  // 2025-03-24..2025-03-30, Berlin's dates
  range.range_end = 1743379200;
  CHECK(budget_between(range, berlin, kMar01, kApr01) == 10 * kNsPerHour);
  CHECK(budget_between(range, berlin, kMar31, kApr01) == 0);  // after the range
}
