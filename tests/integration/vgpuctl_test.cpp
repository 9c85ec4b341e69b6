// vgpuctl as a teacher or admin uses it: every command a subprocess against a
// real daemon and database.
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "quota_harness.h"

using namespace vgpu::test;
using nlohmann::json;

namespace {

size_t lines(const std::string& s) {
  return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}

std::string joined(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) out += (out.empty() ? "" : " ") + a;
  return out;
}

struct Class {
  TempDir dir;
  std::string db = dir.path() + "/vgpu.db";
  QuotaDaemon daemon{dir.path(), db};

  RunResult ctl(const std::vector<std::string>& args, int uid = -1) {
    return daemon.ctl(args, uid);
  }
  void ok(const std::vector<std::string>& args) {
    const RunResult r = ctl(args);
    INFO(joined(args) << ": " << r.output);
    REQUIRE(r.exit_code == 0);
  }
  json json_of(const std::vector<std::string>& args) {
    std::vector<std::string> a = {"--json"};
    a.insert(a.end(), args.begin(), args.end());
    const RunResult r = ctl(a);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return json::parse(r.output);
  }
  void setup() {
    ok({"course", "create", "cs101"});
    ok({"student", "add", "alice", "--course", "cs101", "--vm", "alice-vm"});
    ok({"student", "add", "bob", "--course", "cs101", "--vm", "bob-vm", "--vm", "bob-vm2"});
    ok({"quota", "set", "--course", "cs101", "--gpu-time", "2h/week", "--memory", "4GiB"});
    ok({"quota", "set", "alice", "--gpu-time", "90m/day", "--on-exhaust", "wait"});
  }
};

}  // namespace

TEST_CASE("every vgpuctl command answers --help", "[vgpuctl]") {
  const std::vector<std::vector<std::string>> commands = {{},
                                                          {"whoami"},
                                                          {"user"},
                                                          {"user", "add"},
                                                          {"user", "list"},
                                                          {"user", "remove"},
                                                          {"course"},
                                                          {"course", "create"},
                                                          {"course", "list"},
                                                          {"course", "show"},
                                                          {"course", "delete"},
                                                          {"student"},
                                                          {"student", "add"},
                                                          {"student", "list"},
                                                          {"student", "show"},
                                                          {"student", "remove"},
                                                          {"student", "bind"},
                                                          {"student", "unbind"},
                                                          {"student", "uid"},
                                                          {"student", "import"},
                                                          {"vm", "list"},
                                                          {"vm", "allow"},
                                                          {"vm", "disallow"},
                                                          {"quota"},
                                                          {"quota", "set"},
                                                          {"quota", "show"},
                                                          {"quota", "reset"},
                                                          {"usage", "report"},
                                                          {"audit"},
                                                          {"top"}};
  for (const auto& c : commands) {
    std::vector<std::string> argv = {vgpuctl_path()};
    argv.insert(argv.end(), c.begin(), c.end());
    argv.push_back("--help");
    const RunResult r = run_command(argv);
    INFO(argv.size() << " " << r.output);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains("Usage:"));
  }
}

TEST_CASE("a teacher's class is set up and read back through vgpuctl", "[vgpuctl]") {
  Class c;
  c.setup();
  const RunResult courses = c.ctl({"course", "list"});
  CHECK_THAT(courses.output, Catch::Contains("cs101"));
  const RunResult show = c.ctl({"course", "show", "cs101"});
  INFO(show.output);
  CHECK_THAT(show.output, Catch::Contains("alice-vm"));
  CHECK_THAT(show.output, Catch::Contains("1h30m/day"));  // alice's own
  CHECK_THAT(show.output, Catch::Contains("2h/week"));    // bob's, from the course
  CHECK_THAT(show.output, Catch::Contains("4GiB"));

  const json alice = c.json_of({"student", "show", "alice"});
  CHECK(alice["quota"]["gpu_time"] == "1h30m/day");
  CHECK(alice["quota"]["on_exhaust"] == "wait");
  CHECK(alice["quota"]["memory"] == "4GiB");
  CHECK(alice["period"]["left"] == "1h30m");
  const json students = c.json_of({"student", "list", "--course", "cs101"});
  REQUIRE(students.size() == 2);
  CHECK(students[1]["vms"] == json({"bob-vm", "bob-vm2"}));

  c.ok({"student", "unbind", "--vm", "bob-vm2"});
  c.ok({"student", "bind", "alice", "--vm", "bob-vm2"});
  c.ok({"quota", "reset", "alice"});
  CHECK(c.json_of({"student", "show", "alice"})["quota"]["gpu_time"] == "2h/week");
  c.ok({"quota", "set", "--default", "--gpu-time", "10m/day", "--unassigned", "refuse"});
  const json levels = c.json_of({"quota", "show", "--default"});
  CHECK(levels[0]["unassigned"] == "refuse");
  CHECK(levels[0]["effective"]["on_exhaust"] == "best-effort");

  c.ok({"course", "create", "old"});
  c.ok({"student", "add", "carol", "--course", "old"});
  CHECK(c.ctl({"course", "delete", "old"}).exit_code != 0);
  c.ok({"course", "delete", "old", "--force"});
  c.ok({"student", "remove", "bob"});
  CHECK_THAT(c.ctl({"student", "list"}).output, !Catch::Contains("\nbob "));

  const RunResult vms = c.ctl({"vm", "list"});
  CHECK_THAT(vms.output, Catch::Contains("bob-vm"));
  CHECK_THAT(vms.output, Catch::Contains("(unassigned)"));

  const RunResult audit = c.ctl({"audit"});
  INFO(audit.output);
  CHECK_THAT(audit.output, Catch::Contains("quota.set"));
  CHECK_THAT(audit.output, Catch::Contains("gpu-time=1h30m/day on-exhaust=wait"));
  CHECK_THAT(audit.output, Catch::Contains("student.remove"));
  CHECK_THAT(audit.output, Catch::Contains("root"));
  const json entries = c.json_of({"audit", "--since", "2000-01-01"});
  CHECK(entries.size() >= 12);
  CHECK(c.json_of({"audit", "--since", "2999-01-01"}).empty());

  const RunResult report = c.ctl({"usage", "report", "--format", "csv"});
  INFO(report.output);
  CHECK(report.exit_code == 0);
  CHECK_THAT(report.output, Catch::StartsWith("student,course,vms,gpu_ns"));
  CHECK_THAT(report.output, Catch::Contains("alice,cs101"));
  const json one = c.json_of(
      {"usage", "report", "--student", "alice", "--since", "2000-01-01", "--until", "2999-12-31"});
  REQUIRE(one["rows"].size() == 1);
  CHECK(one["rows"][0]["student"] == "alice");
  CHECK(c.json_of({"usage", "report", "--course", "cs101"})["rows"].size() ==
        1);  // bob was removed
}

TEST_CASE("bad input gets one line, a non-zero exit, and leaves the database byte-identical",
          "[vgpuctl]") {
  Class c;
  c.setup();
  const std::string before = database_bytes(c.db);
  const std::vector<std::vector<std::string>> bad = {
      {"quota", "set", "nobody", "--gpu-time", "1h/day"},
      {"quota", "set", "alice", "--gpu-time", "banana"},
      {"quota", "set", "alice", "--gpu-time", "2h/fortnight"},
      {"quota", "set", "alice", "--memory", "-1GiB"},
      {"quota", "set", "alice", "--memory=-1GiB"},
      {"quota", "set", "alice", "--weight", "0"},
      {"quota", "set", "alice", "--on-exhaust", "explode"},
      {"quota", "set", "--gpu-time", "1h/day"},
      {"quota", "set", "alice"},
      {"quota", "set", "alice", "--unassigned", "refuse"},
      {"student", "add", "dave", "--course", "nope"},
      {"student", "add", "alice", "--course", "cs101"},
      {"student", "add", "bad/name", "--course", "cs101"},
      {"student", "remove", "nobody"},
      {"student", "bind", "alice", "--vm", "bob-vm"},
      {"student", "unbind", "--vm", "never-seen"},
      {"course", "create", "cs101"},
      {"course", "delete", "cs101"},
      {"course", "show", "nope"},
      {"user", "add", "tina"},
      {"user", "add", "tina", "--uid", "-5"},
      {"usage", "report", "--since", "yesterday"},
      {"usage", "report", "--student", "nobody"},
      {"usage", "report", "--format", "xml"},
      {"frobnicate"},
      {"course"},
  };
  for (const auto& args : bad) {
    const RunResult r = c.ctl(args);
    INFO(joined(args) << ": " << r.output);
    CHECK(r.exit_code != 0);
    CHECK(lines(r.output) == 1);
    CHECK_THAT(r.output, Catch::StartsWith("vgpuctl: "));
  }
  CHECK(database_bytes(c.db) == before);
}

TEST_CASE("with the daemon down, reports read the database and changes are refused", "[vgpuctl]") {
  Class c;
  c.setup();
  const RunResult ran = c.daemon.run("alice-vm", "vector_add");
  REQUIRE(ran.exit_code == 0);
  REQUIRE(c.daemon.stop().exit_code == 0);

  const RunResult down = c.ctl({"usage", "report"});
  CHECK(down.exit_code != 0);
  CHECK_THAT(down.output, Catch::Contains("vgpud is not running"));
  CHECK_THAT(down.output, Catch::Contains("--db"));

  const std::string before = database_bytes(c.db);
  const RunResult report = c.ctl({"--db", c.db, "--json", "usage", "report"});
  INFO(report.output);
  REQUIRE(report.exit_code == 0);
  const json r = json::parse(report.output);
  bool found = false;
  for (const json& row : r["rows"]) {
    if (row["student"] == "alice") {
      found = true;
      CHECK(row["kernels"].get<int>() >= 1);
      CHECK(row["gpu_ns"].get<int64_t>() > 0);
      CHECK(row["bytes_to_device"].get<int64_t>() > 0);
    }
  }
  CHECK(found);
  CHECK(c.ctl({"--db", c.db, "course", "list"}).exit_code == 0);
  CHECK(c.ctl({"--db", c.db, "audit"}).exit_code == 0);
  const RunResult change = c.ctl({"--db", c.db, "course", "create", "x"});
  CHECK(change.exit_code != 0);
  CHECK(lines(change.output) == 1);
  CHECK_THAT(change.output, Catch::Contains("changes go through vgpud"));
  CHECK(database_bytes(c.db) == before);
}

TEST_CASE("teachers are told apart by uid and change only their own courses", "[vgpuctl]") {
  Class c;
  chmod(c.dir.path().c_str(), 0755);  // let another uid reach the admin socket
  c.setup();
  const int tina = 4321, stranger = 4322;
  c.ok({"user", "add", "tina", "--uid", std::to_string(tina)});
  const RunResult who = c.ctl({"whoami"}, tina);
  INFO(who.output);
  CHECK_THAT(who.output, Catch::Contains("tina (uid 4321): teacher"));
  REQUIRE(c.ctl({"course", "create", "ml200"}, tina).exit_code == 0);
  REQUIRE(
      c.ctl({"student", "add", "erin", "--course", "ml200", "--vm", "erin-vm"}, tina).exit_code ==
      0);
  REQUIRE(c.ctl({"quota", "set", "erin", "--gpu-time", "30m/day"}, tina).exit_code == 0);
  const RunResult mine = c.ctl({"course", "list"}, tina);
  CHECK_THAT(mine.output, Catch::Contains("ml200"));
  CHECK_THAT(mine.output, !Catch::Contains("cs101"));

  const std::string before = database_bytes(c.db);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"student", "add", "mallory", "--course", "cs101"},
           {"quota", "set", "alice", "--gpu-time", "100h/day"},
           {"quota", "set", "--course", "ml200", "--weight", "50"},
           {"quota", "set", "--default", "--gpu-time", "1h/day"},
           {"course", "delete", "cs101", "--force"},
           {"user", "add", "eve", "--uid", "77", "--role", "admin"},
           {"student", "bind", "erin", "--vm", "alice-vm"}}) {
    const RunResult r = c.ctl(args, tina);
    INFO(joined(args) << ": " << r.output);
    CHECK(r.exit_code != 0);
    CHECK(lines(r.output) == 1);
  }
  const RunResult nobody = c.ctl({"course", "list"}, stranger);
  CHECK(nobody.exit_code != 0);
  CHECK_THAT(nobody.output, Catch::Contains("uid 4322 is not a vgpu admin or teacher"));
  CHECK(database_bytes(c.db) == before);

  const json log = c.json_of({"audit"});
  bool by_tina = false;
  for (const json& e : log) {
    if (e["object"] == "quota of student erin") {
      by_tina = e["actor"] == "tina" && e["uid"] == tina;
    }
  }
  CHECK(by_tina);
  // Tina's audit view holds her course and nothing of cs101.
  const RunResult her_log = c.ctl({"audit"}, tina);
  CHECK_THAT(her_log.output, Catch::Contains("erin"));
  CHECK_THAT(her_log.output, !Catch::Contains("alice"));
  // Once removed, she is a stranger; her course stays, run by admins.
  c.ok({"user", "remove", "tina"});
  CHECK(c.ctl({"whoami"}, tina).exit_code != 0);
  CHECK_THAT(c.ctl({"course", "list"}).output, Catch::Contains("ml200"));
  CHECK_THAT(c.ctl({"user", "list"}).output, !Catch::Contains("tina"));
}

TEST_CASE("every command says its release and the protocols it speaks", "[vgpuctl]") {
  for (const auto& [name, path] : std::vector<std::pair<std::string, std::string>>{
           {"vgpud", vgpud_path()}, {"vgpuctl", vgpuctl_path()}, {"vgpu-run", vgpu_run_path()}}) {
    const RunResult r = run_command({path, "--version"});
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::StartsWith(name + " 0."));
    CHECK_THAT(r.output, Catch::Contains("(wire protocol 1, hand-over 1, region 2)"));
  }
}

namespace {

// Runs device_query as simulated VM `vm` from a process of `uid` (tests run
// as root, as the README says, so they can be any user).
RunResult run_as_vm(const Class& c, const std::string& vm, int uid) {
  return run_command({vgpu_run_path(), "--runtime-dir", c.daemon.dir(), "--vm", vm, "--",
                      program_path("device_query")},
                     uid);
}

}  // namespace

TEST_CASE("a simulated VM runs only for its student's login, admins, root and vgpud's user", "[vgpuctl]") {
  Class c;
  chmod(c.dir.path().c_str(), 0755);  // let other uids reach the sockets
  // As an admin does who lets the students' own processes in (vgpud makes
  // the socket 0660, for its VM group): the check below is what then keeps
  // them apart.
  REQUIRE(chmod((c.daemon.dir() + "/vgpud.sock").c_str(), 0666) == 0);
  c.setup();
  const int alice = 4331, stranger = 4332, ada = 4333, dave = 4334;

  RunResult r = run_as_vm(c, "alice-vm", alice);
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains("uid 4331 may not run as VM 'alice-vm'"));
  CHECK_THAT(r.output, Catch::Contains("vgpuctl student uid STUDENT 4331"));
  // Refused before anything is recorded: a made-up name leaves no VM behind.
  CHECK(run_as_vm(c, "made-up-vm", stranger).exit_code != 0);
  CHECK(query_int(c.db, "SELECT COUNT(*) FROM vms WHERE name = 'made-up-vm'") == 0);

  c.ok({"student", "uid", "alice", std::to_string(alice)});
  CHECK(c.json_of({"student", "show", "alice"})["uid"] == alice);
  r = run_as_vm(c, "alice-vm", alice);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(run_as_vm(c, "bob-vm", alice).exit_code != 0);  // hers only
  CHECK(run_as_vm(c, "alice-vm", stranger).exit_code != 0);

  c.ok({"user", "add", "ada", "--uid", std::to_string(ada), "--role", "admin"});
  CHECK(run_as_vm(c, "bob-vm", ada).exit_code == 0);
  c.ok({"student", "add", "dave", "--course", "cs101", "--vm", "dave-vm", "--uid", std::to_string(dave)});
  CHECK(run_as_vm(c, "dave-vm", dave).exit_code == 0);

  c.ok({"student", "uid", "alice", "none"});
  CHECK(run_as_vm(c, "alice-vm", alice).exit_code != 0);
  CHECK(run_as_vm(c, "alice-vm", -1).exit_code == 0);  // vgpud's own user (root here)
  // Bad input changes nothing (the VMs that ran keep the ledger writing, so
  // the audit log and the students are what is compared).
  const int64_t audited = query_int(c.db, "SELECT COUNT(*) FROM audit");
  CHECK(c.ctl({"student", "uid", "alice", "-3"}).exit_code != 0);
  CHECK(c.ctl({"student", "uid", "alice", "4294967295"}).exit_code != 0);
  CHECK(c.ctl({"student", "uid", "nobody-here", "5"}).exit_code != 0);
  CHECK(query_int(c.db, "SELECT COUNT(*) FROM audit") == audited);
  CHECK(query_int(c.db, "SELECT COUNT(*) FROM students WHERE uid IS NOT NULL") == 1);  // dave's
  CHECK_THAT(c.ctl({"audit"}).output, Catch::Contains("student.uid"));
}
