// `usage report --by ... --time hours|percent`: the daemon's breakdown as a
// Table, checked cell by cell in every output format.
#include "breakdown_table.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "printed.h"

using namespace vgpu::ctl;
using vgpu::ctl::test::printed;
using nlohmann::json;

namespace {

constexpr int64_t kMin = 60LL * 1000000000;

// Two days of a Berlin course: alice has a 1h/day quota, bob none, and an
// unassigned VM; 2025-03-30 00:00 Berlin is 1743289200.
json answer() {
  return json::parse(R"({"since": 0, "until": 1743458400, "generated_at": 1743458400,
    "by": ["day", "student"], "rows": [
    {"period": "2025-03-30", "start": 1743289200, "end": 1743372000, "time_zone": "Europe/Berlin",
     "course": "ml200", "assigned": true, "student": "alice", "removed": false, "vms": ["a1", "a2"],
     "gpu_ns": 2700000000000, "quota_ns": 3600000000000},
    {"period": "2025-03-30", "start": 1743289200, "end": 1743372000, "time_zone": "Europe/Berlin",
     "course": "ml200", "assigned": true, "student": "bob", "removed": true, "vms": [],
     "gpu_ns": 900000000000, "quota_ns": null},
    {"period": "2025-03-30", "start": 1743292800, "end": 1743379200, "time_zone": "UTC",
     "course": "", "assigned": false, "student": "", "removed": false, "vms": ["stray"],
     "gpu_ns": 360000000000, "quota_ns": 0}]})");
}

}  // namespace

TEST_CASE("a breakdown by day and student, GPU time as a duration", "[vgpuctl]") {
  const Table t = breakdown_table(answer(), TimeUnit::kDuration);
  CHECK(printed(t, Format::kTable) ==
        "PERIOD      TIME ZONE      COURSE  STUDENT        VMS    GPU TIME  QUOTA\n"
        "2025-03-30  Europe/Berlin  ml200   alice          a1,a2  45m       1h\n"
        "2025-03-30  Europe/Berlin  ml200   bob (removed)  -      15m       -\n"
        "2025-03-30  UTC            -       (unassigned)   stray  6m        0s\n");
  CHECK(printed(t, Format::kCsv, false) ==
        "2025-03-30,2025-03-29T23:00:00Z,2025-03-30T22:00:00Z,Europe/Berlin,ml200,alice,a1 a2,"
        "2700000000000,3600000000000\n"
        "2025-03-30,2025-03-29T23:00:00Z,2025-03-30T22:00:00Z,Europe/Berlin,ml200,bob (removed),,"
        "900000000000,\n"
        "2025-03-30,2025-03-30T00:00:00Z,2025-03-31T00:00:00Z,UTC,,(unassigned),stray,"
        "360000000000,0\n");
}

TEST_CASE("a breakdown in hours and in percent of quota; no quota is null, not 0 or inf",
          "[vgpuctl]") {
  const json hours =
      json::parse(printed(breakdown_table(answer(), TimeUnit::kHours), Format::kJson));
  REQUIRE(hours.size() == 3);
  CHECK(hours[0]["gpu_hours"] == 0.75);
  CHECK(hours[0]["gpu_ns"] == 45 * kMin);
  CHECK(hours[0]["quota_ns"] == 60 * kMin);
  CHECK(hours[1]["gpu_hours"] == 0.25);
  CHECK(hours[1]["quota_ns"].is_null());
  CHECK(hours[0]["start"] == "2025-03-29T23:00:00Z");

  const Table pct = breakdown_table(answer(), TimeUnit::kPercent);
  const json rows = json::parse(printed(pct, Format::kJson));
  CHECK(rows[0]["quota_percent"] == 75.0);
  CHECK(rows[1]["quota_percent"].is_null());  // no limit
  CHECK(rows[2]["quota_percent"].is_null());  // a budget of 0: not infinite
  CHECK(rows[2]["gpu_ns"] == 6 * kMin);
  const std::string table = printed(pct, Format::kTable);
  CHECK_THAT(table, Catch::StartsWith("PERIOD      TIME ZONE      COURSE  STUDENT        VMS    "
                                      "% OF QUOTA  QUOTA\n"));
  CHECK_THAT(table, Catch::Contains("alice          a1,a2  75.00%      1h\n"));
  CHECK_THAT(table, Catch::Contains("bob (removed)  -      -           -\n"));
  CHECK_THAT(printed(pct, Format::kCsv),
             Catch::StartsWith(
                 "period,start,end,time_zone,course,student,vms,quota_percent,gpu_ns,quota_ns\n"));
}

TEST_CASE("a breakdown by course over the whole span", "[vgpuctl]") {
  const json a = json::parse(R"({"since": 0, "until": 100, "generated_at": 100, "by": ["course"],
    "rows": [{"period": null, "start": 0, "end": 100, "time_zone": "Asia/Tokyo", "course": "cs101",
              "assigned": true, "students": 3, "gpu_ns": 5400000000000, "quota_ns": 21600000000000},
             {"period": null, "start": 0, "end": 100, "time_zone": "UTC", "course": "",
              "assigned": false, "students": 2, "gpu_ns": 60000000000, "quota_ns": null}]})");
  const Table t = breakdown_table(a, TimeUnit::kHours);
  CHECK(printed(t, Format::kTable) ==
        "TIME ZONE   COURSE        STUDENTS  GPU HOURS  QUOTA\n"
        "Asia/Tokyo  cs101         3         1.50       6.00\n"
        "UTC         (unassigned)  2         0.02       -\n");
  CHECK(printed(t, Format::kCsv) ==
        "time_zone,course,students,gpu_hours,gpu_ns,quota_ns\n"
        "Asia/Tokyo,cs101,3,1.5,5400000000000,21600000000000\n"
        "UTC,(unassigned),2,0.0167,60000000000,\n");
  TimeUnit u = TimeUnit::kDuration;
  CHECK(parse_time_unit("percent", &u));
  CHECK(u == TimeUnit::kPercent);
  CHECK_FALSE(parse_time_unit("minutes", &u));
}
