// `usage.report` with "by": usage per day, week or month and per student or
// course, in each course's time zone, with each row's budget, from ledger
// rows written at known instants into a real database (a SQLite file, or
// a PostgreSQL server in admin_test_postgres).
#include <catch2/catch.hpp>

#include "admin_ops.h"
#include "temp_db.h"

using namespace vgpu;
using namespace vgpu::policy;
using namespace vgpu::policy::test;
using nlohmann::json;

namespace {

constexpr int64_t kMin = 60LL * 1000000000;
constexpr int64_t kHourNs = 60 * kMin;
// Europe/Berlin midnights, 2025 (clocks go forward on 2025-03-30, a 23-hour day).
constexpr int64_t kMar01 = 1740783600;
constexpr int64_t kMar30 = 1743289200;  // 2025-03-29 23:00 UTC
constexpr int64_t kMar31 = 1743372000;  // Mon, 2025-03-30 22:00 UTC
constexpr int64_t kApr01 = 1743458400;

struct Class {
  TempDb db;
  std::unique_ptr<Store> s = db.open();
  std::map<std::string, uint32_t> id;
  std::map<std::string, TenantId> vm;

  Class() {
    REQUIRE(s);
    REQUIRE(s->add_user(root(), UserRow{0, "tina", 2001, Role::kTeacher, 0}).ok());
    REQUIRE(s->create_course(root(), CourseSpec{"ml200", "tina", "Europe/Berlin"}).ok());
    REQUIRE(s->create_course(root(), "cs101", "").ok());  // UTC
    add("alice", "ml200");
    add("bob", "ml200");
    add("carol", "cs101");
    quota({QuotaTarget::Kind::kCourse, "ml200"}, "1h/day");
    quota({QuotaTarget::Kind::kStudent, "bob"}, "2h/week");
    REQUIRE(s->tenant_for_vm("stray", &vm["stray"]).ok());
    // They joined on 2025-03-01 (Berlin), before the usage below.
    sql::Db raw;
    std::string why;
    REQUIRE(db.open_raw(&raw, &why));
    REQUIRE(raw.exec("UPDATE students SET created_at = " + std::to_string(kMar01), &why));
    // The ledger, per hour. In Berlin: alice 30m on Saturday 23:00 and 45m
    // on Sunday 00:00 (both 2025-03-29 in UTC); bob 1h on Sunday, 30m on
    // Monday (a new week). carol (UTC) 15m on 2025-03-29; a VM bound to no
    // one 6m on 2025-03-30.
    charge("alice", kMar30 - 3600, 30 * kMin);
    charge("alice", kMar30, 45 * kMin);
    charge("bob", kMar30 + 11 * 3600, kHourNs);
    charge("bob", kMar31 + 10 * 3600, 30 * kMin);
    charge("carol", kMar30, 15 * kMin);
    REQUIRE(s->record_usage(std::vector<UsageRecord>{UsageRecord{vm["stray"], kMar30 + 13 * 3600,
                                                                 6 * kMin, 1, 0, 0, 0, 0}})
                .ok());
  }
  void add(const std::string& name, const std::string& course) {
    REQUIRE(s->add_student(root(), name, course, {name + "-vm"}).ok());
    REQUIRE(s->tenant_for_vm(name + "-vm", &vm[name]).ok());
    std::vector<StudentRow> rows;
    REQUIRE(s->list_students(root(), "", false, &rows).ok());
    for (const StudentRow& r : rows) id[r.name] = static_cast<uint32_t>(r.id);
  }
  void quota(const QuotaTarget& t, const char* budget) {
    const json r =
        admin::execute(*s, root(),
                       {{"op", "quota.set"},
                        {"kind", t.kind == QuotaTarget::Kind::kCourse ? "course" : "student"},
                        {"name", t.name},
                        {"gpu_time", budget}},
                       0)
            .answer;
    REQUIRE(r["ok"] == true);
  }
  void charge(const std::string& student, int64_t at, int64_t ns) {
    REQUIRE(
        s->record_usage(std::vector<UsageRecord>{UsageRecord{
                            vm[student], at, static_cast<uint64_t>(ns), 1, 0, 0, 0, id[student]}})
            .ok());
  }
  json report(json request, const Actor& by = root()) {
    request["op"] = "usage.report";
    const json r = admin::execute(*s, by, request, kApr01 + 86400).answer;
    INFO(r.dump());
    REQUIRE(r["ok"] == true);
    return r["result"];
  }
};

// A row as "period course student gpu_ns quota_ns" for one CHECK.
std::string brief(const json& row) {
  std::string out = row["period"].is_null() ? "-" : row["period"].get<std::string>();
  out += " " + row["time_zone"].get<std::string>() + " " + row["course"].get<std::string>();
  if (row.contains("student")) {
    out += " " + (row["assigned"] == true ? row["student"].get<std::string>()
                                          : "(" + row["vms"][0].get<std::string>() + ")");
  } else {
    out += " students=" + std::to_string(row["students"].get<int>());
  }
  out += " " + std::to_string(row["gpu_ns"].get<int64_t>());
  out += " " + (row["quota_ns"].is_null() ? std::string("null")
                                          : std::to_string(row["quota_ns"].get<int64_t>()));
  return out;
}

std::vector<std::string> briefs(const json& result) {
  std::vector<std::string> out;
  for (const json& row : result["rows"]) out.push_back(brief(row));
  return out;
}

std::string ns(int64_t v) { return std::to_string(v); }

}  // namespace

TEST_CASE("usage by day and student: each course's days on its own clock", "[admin]") {
  Class c;
  const json r = c.report({{"by", {"day", "student"}}, {"until", kApr01}});
  CHECK(r["by"] == json({"day", "student"}));
  CHECK(briefs(r) ==
        std::vector<std::string>{
            "2025-03-29 UTC cs101 carol " + ns(15 * kMin) + " null",
            "2025-03-29 Europe/Berlin ml200 alice " + ns(30 * kMin) + " " + ns(kHourNs),
            // Berlin's Sunday has 23 hours: alice's day budget is whole, bob's
            // week gives it 23/167 of 2h.
            "2025-03-30 Europe/Berlin ml200 alice " + ns(45 * kMin) + " " + ns(kHourNs),
            "2025-03-30 Europe/Berlin ml200 bob " + ns(kHourNs) + " 991616766467",
            "2025-03-30 UTC  (stray) " + ns(6 * kMin) + " null",
            // A day of a 168-hour week.
            "2025-03-31 Europe/Berlin ml200 bob " + ns(30 * kMin) + " 1028571428571",
        });
  const json& sunday = r["rows"][2];
  CHECK(sunday["start"] == kMar30);
  CHECK(sunday["end"] == kMar31);
  CHECK(sunday["end"].get<int64_t>() - sunday["start"].get<int64_t>() == 23 * 3600);
  CHECK(sunday["vms"] == json({"alice-vm"}));
}

TEST_CASE("usage by week and course: budgets of every live student", "[admin]") {
  Class c;
  const json r = c.report({{"by", {"week", "course"}}, {"until", kApr01}});
  CHECK(briefs(r) ==
        std::vector<std::string>{
            "2025-03-24 UTC cs101 students=1 " + ns(15 * kMin) + " null",
            // alice 7 x 1h, bob 2h
            "2025-03-24 Europe/Berlin ml200 students=2 " + ns(135 * kMin) + " " + ns(9 * kHourNs),
            "2025-03-24 UTC  students=1 " + ns(6 * kMin) + " null",
            "2025-03-31 Europe/Berlin ml200 students=1 " + ns(30 * kMin) + " " + ns(9 * kHourNs),
        });
  CHECK(r["rows"][2]["assigned"] == false);
}

TEST_CASE("usage by month, and over the whole span, per course", "[admin]") {
  Class c;
  json r = c.report({{"by", {"month"}}, {"course", "ml200"}, {"until", kApr01}});
  CHECK(r["by"] == json({"month", "student"}));
  // March: alice 31 days of 1h; bob's weeks of Monday 2025-03-03 to 03-24
  // count whole (8h), the week of Monday 02-24 for its last two days (2h x
  // 48/168) and the week of 03-31 for its first (2h x 24/168).
  CHECK(briefs(r) ==
        std::vector<std::string>{
            "2025-03 Europe/Berlin ml200 alice " + ns(75 * kMin) + " " + ns(31 * kHourNs),
            "2025-03 Europe/Berlin ml200 bob " + ns(90 * kMin) + " 31885714285714",
        });
  CHECK(r["rows"][0]["start"] == kMar01);
  CHECK(r["rows"][0]["end"] == kApr01);
  r = c.report({{"by", {"course"}}, {"until", kApr01}});
  CHECK(r["by"] == json({"course"}));
  CHECK(briefs(r) == std::vector<std::string>{
                         "- UTC cs101 students=1 " + ns(15 * kMin) + " null",
                         "- Europe/Berlin ml200 students=2 " + ns(165 * kMin) + " " +
                             ns(31 * kHourNs + 10 * kHourNs + 1028571428571),
                         "- UTC  students=1 " + ns(6 * kMin) + " null",
                     });
}

TEST_CASE("a teacher's breakdown holds their courses only; bad requests are refused", "[admin]") {
  Class c;
  Actor tina;
  REQUIRE(c.s->actor_for_uid(2001, &tina).ok());
  const json r = c.report({{"by", {"student"}}, {"until", kApr01}}, tina);
  CHECK(briefs(r) ==
        std::vector<std::string>{
            "- Europe/Berlin ml200 alice " + ns(75 * kMin) + " " + ns(31 * kHourNs),
            "- Europe/Berlin ml200 bob " + ns(90 * kMin) + " " + ns(10 * kHourNs + 1028571428571),
        });
  for (const json& by :
       {json({"day", "week"}), json({"student", "course"}), json("day"), json({"year"})}) {
    INFO(by.dump());
    const json a = admin::execute(*c.s, root(), {{"op", "usage.report"}, {"by", by}}, 0).answer;
    CHECK(a["ok"] == false);
  }
  // Without "by", the report is the one it always was.
  const json plain = c.report({{"until", kApr01}});
  CHECK_FALSE(plain.contains("by"));
  CHECK(plain.contains("series"));
}

TEST_CASE("the report's chart counts days from its course's midnights and labels them on its wall clock") {
  Class c;
  c.charge("alice", kMar01 + 3600, 10 * kMin);  // a month of usage: days
  const json berlin = c.report({{"course", "ml200"}});
  INFO(berlin.dump());
  CHECK(berlin["time_zone"] == "Europe/Berlin");
  CHECK(berlin["bucket_s"] == 86400);
  // Every bucket is one Berlin day: the one clocks go forward is 23 hours.
  bool saw_short_day = false;
  for (const json& p : berlin["series"]) {
    const int64_t start = p["start"], end = p["end"];
    CHECK((end - start == 86400 || end - start == 23 * 3600));
    if (start == kMar30) {
      saw_short_day = true;
      CHECK(end == kMar31);
      CHECK(p["label"] == "2025-03-30");
      // alice's 00:00 hour and bob's 11:00 hour, Berlin time, fall on that day.
      CHECK(p["gpu_ns"]["alice"] == 45 * kMin);
      CHECK(p["gpu_ns"]["bob"] == kHourNs);
    }
    if (start == kMar30 - 86400) CHECK(p["gpu_ns"]["alice"] == 30 * kMin);  // Saturday 23:00
  }
  CHECK(saw_short_day);
  CHECK(berlin["series"][0]["start"] == kMar01);
  CHECK(berlin["series"][0]["label"] == "2025-03-01");

  // Courses in different zones together: UTC days.
  const json all = c.report(json::object());
  CHECK(all["time_zone"] == "UTC");
  for (const json& p : all["series"]) {
    const int64_t start = p["start"];
    CHECK(start % 86400 == 0);
  }
}
