// vgpuctl student import: a class from a CSV roster, through a real daemon
// into a real database: one bad row and nothing changes; --partial keeps the
// good rows; a teacher imports only into their own course.
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "quota_harness.h"

using namespace vgpu::test;
using nlohmann::json;

namespace {

struct Roster {
  TempDir dir;
  std::string db = dir.path() + "/vgpu.db";
  QuotaDaemon daemon{dir.path(), db};

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir.path() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  RunResult ctl(const std::vector<std::string>& args, int uid = -1) {
    return daemon.ctl(args, uid);
  }
  int64_t count(const std::string& sql) { return query_int(db, sql); }
};

// 30 students s01..s30, on lines 2..31. Every third has a quota of their own,
// every fifth a memory cap; s05's name is quoted, as spreadsheets may write it.
// `bad_row` (2..31), if given, asks for a budget period that does not exist.
std::string class_of_30(int bad_row) {
  std::string text = "name,vm,uid,gpu_time,memory\n";
  for (int i = 1; i <= 30; ++i) {
    char name[8];
    std::snprintf(name, sizeof name, "s%02d", i);
    const std::string n = name;
    std::string gpu = i % 3 == 0 ? "90m/day" : "";
    if (i + 1 == bad_row) gpu = "2h/fortnight";
    text += (i == 5 ? "\"" + n + "\"" : n) + "," + n + "-vm," + std::to_string(5000 + i) + "," +
            gpu + "," + (i % 5 == 0 ? "4GiB" : "") + "\n";
  }
  return text;
}

}  // namespace

TEST_CASE("a 30-student roster: one bad row refuses it all, --partial keeps the rest",
          "[vgpuctl]") {
  Roster c;
  REQUIRE(c.ctl({"course", "create", "cs101"}).exit_code == 0);
  const std::string path = c.write("roster.csv", class_of_30(18));  // s17

  // All or nothing: the bad row is named, and the database is as it was.
  const std::string before = database_bytes(c.db);
  const RunResult refused = c.ctl({"student", "import", path, "--course", "cs101"});
  INFO(refused.output);
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.output, Catch::Contains("18   s17   refused    gpu_time:"));
  CHECK_THAT(refused.output, Catch::Contains("nothing was added: 1 of 30 rows refused"));
  CHECK(database_bytes(c.db) == before);
  CHECK(c.count("SELECT count(*) FROM students") == 0);

  const RunResult as_json = c.ctl({"student", "import", path, "--course", "cs101", "-o", "json"});
  REQUIRE(as_json.exit_code == 1);
  const json report = json::parse(as_json.output);
  REQUIRE(report.size() == 30);
  for (const json& r : report) {
    INFO(r.dump());
    if (r["name"] == "s17") {
      CHECK(r["row"] == 18);
      CHECK(r["result"] == "refused");
      CHECK_THAT(r["reason"].get<std::string>(), Catch::Contains("fortnight"));
    } else {
      CHECK(r["result"] == "not added");
    }
  }
  CHECK(database_bytes(c.db) == before);

  // --partial: the 29 good rows, with everything each row asks for.
  const int64_t audited = c.count("SELECT count(*) FROM audit");
  const RunResult partial = c.ctl({"student", "import", path, "--course", "cs101", "--partial"});
  INFO(partial.output);
  CHECK(partial.exit_code == 1);  // a row was refused: scripts notice
  CHECK_THAT(partial.output, Catch::Contains("18   s17   refused"));
  CHECK_THAT(partial.output, Catch::Contains("added 29 of 30 students to cs101"));
  CHECK(c.count("SELECT count(*) FROM students") == 29);
  CHECK(c.count("SELECT count(*) FROM students WHERE name = 's17'") == 0);
  CHECK(c.count("SELECT uid FROM students WHERE name = 's05'") == 5005);
  CHECK(c.count("SELECT count(*) FROM vms v JOIN students s ON s.id = v.student_id "
                "WHERE v.name = s.name || '-vm'") == 29);
  // The audit log holds what adding each one by hand would have written:
  // student.add, vm.bind and student.uid for each of the 29, and quota.set for
  // the 14 with a quota of their own (every third and every fifth).
  const int64_t with_quota = 14;
  CHECK(c.count("SELECT count(*) FROM audit") == audited + 29 * 3 + with_quota);
  const RunResult s15 = c.ctl({"--json", "student", "show", "s15"});
  REQUIRE(s15.exit_code == 0);
  const json shown = json::parse(s15.output);
  CHECK(shown["quota"]["gpu_time"] == "1h30m/day");
  CHECK(shown["quota"]["memory"] == "4GiB");
  CHECK(shown["vms"] == json({"s15-vm"}));

  // Importing the same file again: every row is taken now but s17's, still bad.
  const RunResult again = c.ctl({"student", "import", path, "--course", "cs101", "--partial"});
  CHECK(again.exit_code == 1);
  CHECK_THAT(again.output, Catch::Contains("student 's01' already exists"));
  CHECK(c.count("SELECT count(*) FROM students") == 29);

  // A good roster goes in whole, and the command says so with exit 0.
  const std::string good = c.write("good.csv", "Name,VM\nt01,t01-vm\n\"t02\",t02-vm\n");
  const RunResult ok = c.ctl({"student", "import", good, "--course", "cs101"});
  INFO(ok.output);
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.output, Catch::Contains("added 2 of 2 students to cs101"));
  CHECK(c.count("SELECT count(*) FROM students") == 31);
}

TEST_CASE("a malformed roster is refused with the reason and changes nothing", "[vgpuctl]") {
  Roster c;
  REQUIRE(c.ctl({"course", "create", "cs101"}).exit_code == 0);
  REQUIRE(c.ctl({"student", "add", "taken", "--course", "cs101"}).exit_code == 0);
  const std::string before = database_bytes(c.db);
  struct Case {
    const char* text;
    int exit_code;
    const char* says;
  };
  for (const Case& k : std::vector<Case>{
           {"name,colour\nann,red\n", 2, "unknown column 'colour'"},
           {"vm,uid\nann-vm,5\n", 2, "no name column"},
           {"name,name\nann,ann\n", 2, "column 'name' is named twice"},
           {"", 2, "it is empty"},
           {"name\n", 2, "names no students"},
           {"name,vm\n\"ann,ann-vm\n", 2, "line 2: a quoted field is not closed"},
           {"name,vm\nann,ann-vm\nben\n", 1, "has 1 fields; the header has 2"},
           {"name\nann\nann\n", 1, "student 'ann' is on rows 2 and 3"},
           {"name\nann\ntaken\n", 1, "student 'taken' already exists"},
           {"name,uid\nann,alice\n", 1, "uid 'alice' is not a number"},
       }) {
    const std::string path = c.write("bad.csv", k.text);
    const RunResult r = c.ctl({"student", "import", path, "--course", "cs101"});
    INFO(k.text << "\n" << r.output);
    CHECK(r.exit_code == k.exit_code);
    CHECK_THAT(r.output, Catch::Contains(k.says));
    if (k.exit_code == 2) {
      CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
      CHECK_THAT(r.output, Catch::StartsWith("vgpuctl: " + path + ": "));
    }
  }
  // A malformed row with --partial is left out like any bad row.
  const std::string path = c.write("short.csv", "name,vm\nann,ann-vm\nben\n");
  CHECK(database_bytes(c.db) == before);
  const RunResult r = c.ctl({"student", "import", path, "--course", "cs101", "--partial"});
  CHECK(r.exit_code == 1);
  CHECK(c.count("SELECT count(*) FROM students WHERE name = 'ann'") == 1);
  CHECK(c.count("SELECT count(*) FROM students WHERE name = 'ben'") == 0);
  // A dry run checks and changes nothing.
  const std::string after = database_bytes(c.db);
  const RunResult dry = c.ctl(
      {"student", "import", c.write("dry.csv", "name\ncat\n"), "--course", "cs101", "--dry-run"});
  CHECK(dry.exit_code == 0);
  CHECK_THAT(dry.output, Catch::Contains("would be added"));
  CHECK(database_bytes(c.db) == after);
}

TEST_CASE("a teacher imports a roster into their own course only", "[vgpuctl]") {
  Roster c;
  chmod(c.dir.path().c_str(), 0755);  // let another uid reach the admin socket
  const int tina = 4521;
  REQUIRE(c.ctl({"user", "add", "tina", "--uid", std::to_string(tina)}).exit_code == 0);
  REQUIRE(c.ctl({"course", "create", "cs101"}).exit_code == 0);  // root's
  REQUIRE(c.ctl({"course", "create", "ml200"}, tina).exit_code == 0);
  const std::string path = c.write("roster.csv", "name,vm\nann,ann-vm\nben,ben-vm\n");
  chmod(path.c_str(), 0644);

  const std::string before = database_bytes(c.db);
  const RunResult theirs =
      c.ctl({"student", "import", path, "--course", "cs101", "--partial"}, tina);
  INFO(theirs.output);
  CHECK(theirs.exit_code == 1);
  CHECK_THAT(theirs.output, Catch::Contains("course 'cs101' is not one of tina's courses"));
  CHECK(database_bytes(c.db) == before);

  const RunResult mine = c.ctl({"student", "import", path, "--course", "ml200"}, tina);
  INFO(mine.output);
  CHECK(mine.exit_code == 0);
  CHECK(c.count("SELECT count(*) FROM students s JOIN courses c ON c.id = s.course_id "
                "WHERE c.name = 'ml200'") == 2);
  CHECK(c.count("SELECT count(*) FROM audit WHERE actor = 'tina' AND action = 'student.add'") == 2);
}
