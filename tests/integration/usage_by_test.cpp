// vgpuctl usage report --by day|week|month --by student|course --time
// hours|percent, and courses' time zones (course create --tz, course set),
// through a real daemon and from the database file (--db), over ledger rows
// written at known instants around Berlin's March change to summer time.
#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "quota_harness.h"

using namespace vgpu::test;
using nlohmann::json;

namespace {

constexpr int64_t kMar01 = 1740783600;  // 2025-03-01 00:00 Europe/Berlin
constexpr int64_t kMar30 = 1743289200;  // 2025-03-30 00:00 Europe/Berlin, 2025-03-29 23:00 UTC

void exec_sql(const std::string& db, const std::string& sql) {
  sqlite3* h = nullptr;
  REQUIRE(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
  sqlite3_busy_timeout(h, 10000);
  char* error = nullptr;
  const int rc = sqlite3_exec(h, sql.c_str(), nullptr, nullptr, &error);
  INFO(sql << ": " << (error ? error : ""));
  sqlite3_free(error);
  sqlite3_close(h);
  REQUIRE(rc == SQLITE_OK);
}

struct BerlinClass {
  TempDir dir;
  std::string db = dir.path() + "/vgpu.db";
  QuotaDaemon daemon{dir.path(), db};

  RunResult ctl(const std::vector<std::string>& args) { return daemon.ctl(args); }
  std::string out(const std::vector<std::string>& args) { return daemon.ctl_ok(args); }
  json json_of(const std::vector<std::string>& args) { return daemon.ctl_json(args); }

  // alice of ml200 (Berlin, 1h/day): 30 min on Saturday 2025-03-29 at 23:00
  // and 45 min on Sunday at 00:00, Berlin time; both on the 29th in UTC.
  void setup() {
    out({"course", "create", "ml200", "--tz", "Europe/Berlin"});
    out({"student", "add", "alice", "--course", "ml200", "--vm", "alice-vm"});
    out({"quota", "set", "--course", "ml200", "--gpu-time", "1h/day"});
    const int64_t tenant = query_int(db, "SELECT tenant_id FROM vms WHERE name = 'alice-vm'");
    const int64_t student = query_int(db, "SELECT id FROM students WHERE name = 'alice'");
    REQUIRE(tenant > 0);
    REQUIRE(student > 0);
    const std::string t = std::to_string(tenant), s = std::to_string(student);
    exec_sql(db, "UPDATE students SET created_at = " + std::to_string(kMar01) + ";" +
                     "INSERT INTO usage(tenant_id, student_id, interval_start, gpu_ns, kernels) "
                     "VALUES (" +
                     t + ", " + s + ", " + std::to_string(kMar30 - 3600) +
                     ", 1800000000000, 3), (" + t + ", " + s + ", " + std::to_string(kMar30) +
                     ", 2700000000000, 4)");
  }
};

}  // namespace

TEST_CASE("a course's time zone: set at creation, shown, changed and audited", "[vgpuctl]") {
  BerlinClass c;
  c.out({"course", "create", "ml200", "--tz", "Europe/Berlin"});
  c.out({"course", "create", "cs101"});
  const json courses = c.json_of({"--json", "course", "list"});
  REQUIRE(courses.size() == 2);
  CHECK(courses[0]["name"] == "cs101");
  CHECK(courses[0]["time_zone"] == "UTC");
  CHECK(courses[1]["time_zone"] == "Europe/Berlin");
  CHECK_THAT(c.out({"course", "show", "ml200"}), Catch::Contains("time zone: Europe/Berlin"));
  CHECK(c.json_of({"--json", "course", "show", "ml200"})["time_zone"] == "Europe/Berlin");

  // An unknown zone is a bad command line: exit 2, nothing sent, nothing made.
  const std::string before = database_bytes(c.db);
  RunResult r = c.ctl({"course", "create", "ee300", "--tz", "Mars/Olympus"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("unknown time zone 'Mars/Olympus'"));
  r = c.ctl({"course", "set", "ml200", "--tz", "Europe/Berlinn"});
  CHECK(r.exit_code == 2);
  CHECK(database_bytes(c.db) == before);
  CHECK(c.json_of({"--json", "course", "list"}).size() == 2);

  c.out({"course", "set", "ml200", "--tz", "America/New_York"});
  CHECK(c.json_of({"--json", "course", "show", "ml200"})["time_zone"] == "America/New_York");
  const json audit = c.json_of({"audit", "-o", "json"});
  const json& last = audit.back();
  CHECK(last["action"] == "course.set");
  CHECK(last["object"] == "course ml200");
  CHECK(last["old"] == "tz=Europe/Berlin");
  CHECK(last["new"] == "tz=America/New_York");
  // Read from the file, while the daemon runs: the same.
  const RunResult file =
      run_command({vgpuctl_path(), "--db", c.db, "--json", "course", "show", "ml200"});
  INFO(file.output);
  REQUIRE(file.exit_code == 0);
  CHECK(json::parse(file.output)["time_zone"] == "America/New_York");
}

TEST_CASE("usage report by day in a course's time zone, in percent and hours of quota",
          "[vgpuctl]") {
  BerlinClass c;
  c.setup();
  // Berlin's days: Saturday and a 23-hour Sunday, 50% and 75% of 1h.
  CHECK(c.out({"usage", "report", "--by", "day", "--time", "percent", "--until", "2025-03-31", "-o",
               "csv"}) ==
        "period,start,end,time_zone,course,student,vms,quota_percent,gpu_ns,quota_ns\n"
        "2025-03-29,2025-03-28T23:00:00Z,2025-03-29T23:00:00Z,Europe/Berlin,ml200,alice,"
        "alice-vm,50.0,1800000000000,3600000000000\n"
        "2025-03-30,2025-03-29T23:00:00Z,2025-03-30T22:00:00Z,Europe/Berlin,ml200,alice,"
        "alice-vm,75.0,2700000000000,3600000000000\n");
  const json hours = c.json_of({"usage", "report", "--by", "day,student", "--time", "hours",
                                "--until", "2025-03-31", "-o", "json"});
  REQUIRE(hours.size() == 2);
  CHECK(hours[0]["gpu_hours"] == 0.5);
  CHECK(hours[1]["gpu_hours"] == 0.75);
  CHECK(hours[1]["period"] == "2025-03-30");
  const std::string table = c.out({"usage", "report", "--by", "day", "--time", "percent", "--until",
                                   "2025-03-31", "--no-header"});
  // --no-header: no column titles, so the columns are as wide as their cells.
  CHECK_THAT(table,
             Catch::Contains("\n2025-03-30  Europe/Berlin  ml200  alice  alice-vm  75.00%  1h\n"));
  CHECK_THAT(table, Catch::StartsWith("Usage by day and student"));

  // The same usage in UTC is one day: 125% of it.
  c.out({"course", "set", "ml200", "--tz", "UTC"});
  CHECK(c.out({"usage", "report", "--by", "day", "--time", "percent", "--until", "2025-03-31", "-o",
               "csv", "--no-header"}) ==
        "2025-03-29,2025-03-29T00:00:00Z,2025-03-30T00:00:00Z,UTC,ml200,alice,alice-vm,125.0,"
        "4500000000000,3600000000000\n");
}

TEST_CASE("usage report by week and course, from the daemon and from the file alike", "[vgpuctl]") {
  BerlinClass c;
  c.setup();
  const std::vector<std::string> args = {"usage",  "report",  "--by",       "week", "--by",
                                         "course", "--until", "2025-03-31", "-o",   "json"};
  const json live = c.json_of(args);
  REQUIRE(live.size() == 1);
  CHECK(live[0]["period"] == "2025-03-24");
  CHECK(live[0]["course"] == "ml200");
  CHECK(live[0]["students"] == 1);
  CHECK(live[0]["gpu_ns"] == 4500000000000);
  CHECK(live[0]["quota_ns"] == 7 * 3600000000000);  // seven days of 1h
  std::vector<std::string> offline = {vgpu::test::vgpuctl_path(), "--db", c.db};
  offline.insert(offline.end(), args.begin(), args.end());
  const RunResult r = run_command(offline);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(json::parse(r.output) == live);
  // A student with no quota shows none, not 0 or infinity.
  c.out({"quota", "set", "--course", "ml200", "--gpu-time", "unlimited"});
  const json none =
      c.json_of({"usage", "report", "--by", "month", "--time", "percent", "-o", "json"});
  REQUIRE(none.size() == 1);
  CHECK(none[0]["period"] == "2025-03");
  CHECK(none[0]["quota_percent"].is_null());
  CHECK(none[0]["quota_ns"].is_null());
}

TEST_CASE("usage report --by refuses what it cannot mean, before asking", "[vgpuctl]") {
  BerlinClass c;
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"usage", "report", "--by", "day", "--by", "week"},
        std::vector<std::string>{"usage", "report", "--by", "student,course"},
        std::vector<std::string>{"usage", "report", "--by", "year"},
        std::vector<std::string>{"usage", "report", "--time", "minutes"},
        std::vector<std::string>{"usage", "report", "--by", "day", "--html", "/tmp/never.html"}}) {
    const RunResult r = c.ctl(bad);
    INFO(r.output);
    CHECK(r.exit_code == 2);
  }
}
