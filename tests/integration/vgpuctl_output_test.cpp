// vgpuctl for scripts: every listing as -o table|csv|json and --no-header,
// checked value by value against the daemon's own answer (--json), on a
// real daemon and database with real usage on the ledger.
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "quota_harness.h"

using namespace vgpu::test;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

struct Listed {
  TempDir dir;
  std::string db = dir.path() + "/vgpu.db";
  QuotaDaemon daemon{dir.path(), db};

  std::string out(const std::vector<std::string>& args) { return daemon.ctl_ok(args); }
  json json_of(const std::vector<std::string>& args) { return daemon.ctl_json(args); }
  const json& row_of(const json& rows, const char* key, const std::string& value) {
    for (const json& r : rows) {
      if (r.value(key, json()) == value) return r;
    }
    FAIL("no row with " << key << " = " << value << " in " << rows.dump());
    return rows;
  }
};

}  // namespace

TEST_CASE("listings print as -o table, csv or json, with or without their header", "[vgpuctl]") {
  Listed c;
  c.out({"course", "create", "cs101"});
  c.out({"student", "add", "alice", "--course", "cs101", "--vm", "alice-vm", "--uid", "4401"});
  c.out({"student", "add", "bob", "--course", "cs101", "--vm", "bob-vm", "--vm", "bob-vm2"});
  c.out({"quota", "set", "--course", "cs101", "--gpu-time", "2h/week"});
  c.out({"quota", "set", "alice", "--gpu-time", "90m/day"});
  const RunResult ran = c.daemon.run("alice-vm", "vector_add");
  INFO(ran.output);
  REQUIRE(ran.exit_code == 0);
  c.out({"usage", "flush"});

  SECTION("student list") {
    const json rows = c.json_of({"student", "list", "-o", "json"});
    REQUIRE(rows.size() == 2);
    CHECK(rows[0]["student"] == "alice");
    CHECK(rows[0]["course"] == "cs101");
    CHECK(rows[0]["vms"] == "alice-vm");
    CHECK(rows[0]["uid"] == 4401);
    CHECK(std::regex_match(rows[0]["added_at"].get<std::string>(),
                           std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
    CHECK(rows[1]["vms"] == "bob-vm bob-vm2");
    CHECK(rows[1]["uid"].is_null());
    // The same as the daemon's answer.
    const json raw = c.json_of({"--json", "student", "list"});
    CHECK(raw[0]["uid"] == rows[0]["uid"]);

    const auto csv = lines_of(c.out({"student", "list", "-o", "csv"}));
    REQUIRE(csv.size() == 3);
    CHECK(csv[0] == "student,course,vms,uid,added_at");
    CHECK_THAT(csv[1], Catch::StartsWith("alice,cs101,alice-vm,4401,20"));
    CHECK_THAT(csv[2], Catch::StartsWith("bob,cs101,bob-vm bob-vm2,,20"));
    const auto bare = lines_of(c.out({"student", "list", "-o", "csv", "--no-header"}));
    CHECK(bare == std::vector<std::string>(csv.begin() + 1, csv.end()));

    const auto table = lines_of(c.out({"student", "list"}));
    REQUIRE(table.size() == 3);
    CHECK_THAT(table[0], Catch::StartsWith("STUDENT  COURSE"));
    const auto table_bare = lines_of(c.out({"student", "list", "--no-header"}));
    REQUIRE(table_bare.size() == 2);
    CHECK_THAT(table_bare[0], Catch::StartsWith("alice"));
    // --no-header leaves JSON as it is.
    CHECK(c.json_of({"student", "list", "-o", "json", "--no-header"}) == rows);
  }

  SECTION("usage report") {
    const json raw = c.json_of({"--json", "usage", "report"});
    const json rows = c.json_of({"usage", "report", "-o", "json"});
    REQUIRE(rows.size() == raw["rows"].size());
    const json& alice = c.row_of(rows, "student", "alice");
    const json& alice_raw = c.row_of(raw["rows"], "student", "alice");
    CHECK(alice["gpu_ns"].is_number_integer());
    CHECK(alice["gpu_ns"].get<int64_t>() > 0);
    CHECK(alice["kernels"].get<int64_t>() >= 1);
    CHECK(alice["bytes_to_device"].get<int64_t>() > 0);
    for (const char* key :
         {"gpu_ns", "kernels", "bytes_to_device", "bytes_from_device", "peak_memory"}) {
      CHECK(alice[key] == alice_raw[key]);
    }
    CHECK(alice["quota"] == "1h30m/day");
    CHECK(alice["vms"] == "alice-vm");
    const int64_t used = alice["period_used_ns"].get<int64_t>();
    CHECK(used == alice_raw["period"]["used_ns"].get<int64_t>());
    CHECK(alice["period_left_ns"].get<int64_t>() == int64_t{90} * 60 * 1000000000 - used);
    const json& bob = c.row_of(rows, "student", "bob");
    CHECK(bob["gpu_ns"] == 0);
    CHECK(bob["vms"] == "bob-vm bob-vm2");
    CHECK(bob["quota"] == "2h/week");

    const std::string csv = c.out({"usage", "report", "-o", "csv"});
    const auto csv_lines = lines_of(csv);
    CHECK(csv_lines[0] ==
          "student,course,vms,gpu_ns,kernels,bytes_to_device,bytes_from_device,peak_memory,quota,"
          "period_used_ns,period_left_ns");
    CHECK(csv_lines.size() == rows.size() + 1);
    CHECK_THAT(csv, Catch::Contains("alice,cs101,alice-vm," +
                                    std::to_string(alice["gpu_ns"].get<int64_t>()) + ","));
    // --format csv, the older spelling, writes the same.
    CHECK(c.out({"usage", "report", "--format", "csv"}) == csv);
    const auto bare = lines_of(c.out({"usage", "report", "-o", "csv", "--no-header"}));
    CHECK(bare == std::vector<std::string>(csv_lines.begin() + 1, csv_lines.end()));
    // The table keeps its title line; --no-header drops only the column titles.
    const auto table = lines_of(c.out({"usage", "report", "--no-header"}));
    CHECK_THAT(table[0], Catch::StartsWith("Usage "));
    CHECK(table.size() == rows.size() + 1);
    // --format json is the daemon's answer, as it always was.
    CHECK(c.json_of({"usage", "report", "--format", "json"})["rows"].size() == rows.size());
  }

  SECTION("vm list, sessions, status and top") {
    const json vms = c.json_of(
        {"--libvirt", "test:///default", "vm", "list", "-o", "json", "--interval", "0.1"});
    const json& alice_vm = c.row_of(vms, "vm", "alice-vm");
    CHECK(alice_vm["student"] == "alice");
    CHECK(alice_vm["gpu_share"] == 0.0);  // measured (not connected now): a number
    CHECK(c.row_of(vms, "domain", "test")["state"] == "running");  // libvirt's test domain
    CHECK(c.row_of(vms, "vm", "bob-vm2")["student"] == "bob");
    CHECK(alice_vm["placement"] == "inherit");
    const auto csv = lines_of(
        c.out({"--libvirt", "test:///default", "vm", "list", "-o", "csv", "--interval", "0"}));
    CHECK(csv[0] == "domain,state,vm,student,placement,gpu_share,uuid");
    CHECK(std::find(csv.begin(), csv.end(), ",,alice-vm,alice,inherit,,") != csv.end());
    CHECK(c.json_of({"vm", "sessions", "-o", "json"}) == json::array());
    CHECK(c.out({"vm", "sessions", "-o", "csv", "--no-header"}).empty());

    // A program that keeps the GPU busy for about five seconds.
    auto busy = c.daemon.start("alice-vm", "busy", {"20000", "250"});
    REQUIRE(busy->wait_for_output("launched", 60s));
    const json top = c.json_of({"top", "--count", "1", "--interval", "0.1", "-o", "json"});
    const json& alice = c.row_of(top, "vm", "alice-vm");
    CHECK(alice["student"] == "alice");
    CHECK(alice["course"] == "cs101");
    CHECK(alice["quota"] == "1h30m/day");
    CHECK(alice["gpu_share"].is_number());
    CHECK(alice["gpu_share"].get<double>() >= 0.0);
    CHECK(alice["queued"].is_number_integer());
    CHECK(alice["spent_ns"].get<int64_t>() > 0);  // vector_add's, at least
    // What is left is the budget less what is spent (and held by running slices).
    CHECK(alice["left_ns"].get<int64_t>() > 0);
    CHECK(alice["left_ns"].get<int64_t>() + alice["spent_ns"].get<int64_t>() <=
          int64_t{90} * 60 * 1000000000);
    const json status = c.json_of({"status", "-o", "json"});
    const json& held = c.row_of(status, "vm", "alice-vm");
    CHECK(held["channels"].get<int64_t>() >= 1);
    CHECK(held["contexts"].get<int64_t>() >= 1);
    CHECK(held["gpu"] == 0);  // the one GPU
    const auto status_csv = lines_of(c.out({"status", "-o", "csv"}));
    CHECK_THAT(status_csv[0], Catch::StartsWith("vm,gpu,channels,contexts,allocations,bytes,"));
    const RunResult done = busy->wait(120s);
    INFO(done.output);
    CHECK(done.exit_code == 0);
  }

  SECTION("the other listings, and bad -o values") {
    const json courses = c.json_of({"course", "list", "-o", "json"});
    REQUIRE(courses.size() == 1);
    CHECK(courses[0]["students"] == 2);
    CHECK(courses[0]["teacher"].is_null());
    const json show = c.json_of({"course", "show", "cs101", "-o", "json"});
    REQUIRE(show.size() == 2);
    CHECK(show[0]["student"] == "alice");
    CHECK(show[0]["gpu_time"] == "1h30m/day");
    CHECK(show[1]["period_left_ns"] == int64_t{2} * 3600 * 1000000000);
    const json levels = c.json_of({"quota", "show", "-o", "json"});
    CHECK(c.row_of(levels, "name", "cs101")["gpu_time"] == "2h/week");
    CHECK(c.row_of(levels, "name", "alice")["weight"] == 1);
    const json audit = c.json_of({"audit", "-o", "json"});
    CHECK(c.row_of(audit, "object", "quota of student alice")["new"] == "gpu-time=1h30m/day");
    CHECK(lines_of(c.out({"audit", "--format", "csv"}))[0] == "at,actor,uid,action,object,old,new");
    CHECK(c.out({"user", "list", "-o", "csv"}) == "user,uid,role,added_at\n");

    const std::string before = database_bytes(c.db);
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"student", "list", "-o", "xml"},
             {"usage", "report", "-o", "csv", "--format", "csv"},
             {"student", "add", "x", "--course", "cs101", "-o", "json"}}) {
      const RunResult r = c.daemon.ctl(args);
      INFO(r.output);
      CHECK(r.exit_code == 2);
      CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
      CHECK_THAT(r.output, Catch::StartsWith("vgpuctl: "));
    }
    CHECK(database_bytes(c.db) == before);
  }
}
