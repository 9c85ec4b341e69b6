// vgpud's scheduling settings: the config file format, its errors, and how
// the file and the flags combine.
#include <catch2/catch.hpp>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <unistd.h>

#include "scheduler_config.h"

using namespace vgpu;
using namespace vgpu::daemon;

namespace {

Status parse(const std::string& text, SchedulerSettings* s, std::string* why) {
  *s = SchedulerSettings{};
  return parse_scheduler_config(text, s, why);
}

std::string temp_file(const std::string& text) {
  char name[] = "/tmp/vgpu-sched-config-XXXXXX";
  const int fd = mkstemp(name);
  REQUIRE(fd >= 0);
  close(fd);
  std::ofstream(name) << text;
  return name;
}

}  // namespace

TEST_CASE("config: defaults are fair, 2 ms, depth 1") {
  SchedulerSettings s;
  std::string why;
  REQUIRE(ok(parse("{}", &s, &why)));
  CHECK(s.policy == "fair");
  CHECK(s.slice_ms == 2.0);
  CHECK(s.overlap_depth == 4);
  CHECK(policy_options(s).slice == 2 * scheduler::kMillisecond);
}

TEST_CASE("config: a full file is read") {
  SchedulerSettings s;
  std::string why;
  REQUIRE(ok(parse(R"({"policy": "fixed-share", "slice_ms": 0.5, "overlap_depth": 6,
                       "weights": {"alice": 4, "bob": 1},
                       "courses": {"gpu101": {"weight": 3, "vms": ["alice", "carol"]}}})",
                   &s, &why)));
  CHECK(s.policy == "fixed-share");
  CHECK(policy_options(s).slice == 500 * scheduler::kMicrosecond);
  CHECK(s.overlap_depth == 6);
  CHECK(s.weights.at("alice") == 4);

  const auto alice = pin_for_vm(s, "alice");
  CHECK(alice.weight == 4u);
  CHECK(alice.group == course_group_id("gpu101"));
  CHECK(alice.group_weight == 3u);
  const auto carol = pin_for_vm(s, "carol");
  CHECK_FALSE(carol.weight.has_value());
  CHECK(carol.group == course_group_id("gpu101"));
  CHECK(pin_for_vm(s, "dave").empty());
}

TEST_CASE("config: mistakes are refused with a reason that names the value") {
  const std::pair<const char*, const char*> cases[] = {
      {"{", "JSON"},
      {"44e444444444", "JSON"},  // a number too big: nlohmann throws out_of_range, not parse_error
      {R"({"slice_ms": 1e999})", "JSON"},
      {R"({"slice_ms": 5.7e55})", "slice"},  // fuzz_config: did not fit in nanoseconds
      {"[1, 2]", "object"},
      {R"({"polcy": "fair"})", "polcy"},
      {R"({"policy": "lottery"})", "lottery"},
      {R"({"policy": 3})", "policy"},
      {R"({"slice_ms": 0.1})", "slice"},
      {R"({"slice_ms": 60})", "slice"},
      {R"({"slice_ms": "2"})", "slice_ms"},
      {R"({"overlap_depth": 0})", "overlap_depth"},
      {R"({"overlap_depth": 17})", "overlap_depth"},
      {R"({"weights": {"alice": 0}})", "alice"},
      {R"({"weights": {"alice": -2}})", "alice"},
      {R"({"weights": {"alice": 1.5}})", "alice"},
      {R"({"weights": {"alice": 2000000}})", "alice"},
      {R"({"weights": ["alice"]})", "weights"},
      {R"({"courses": {"c": {"weight": 2, "vms": "alice"}}})", "vms"},
      {R"({"courses": {"c": {"wieght": 2}}})", "wieght"},
      {R"({"courses": {"a": {"vms": ["x"]}, "b": {"vms": ["x"]}}})", "two courses"},
  };
  for (const auto& [text, mention] : cases) {
    SchedulerSettings s;
    s.policy = "best-effort";  // must survive a failed parse untouched
    std::string why;
    INFO(text);
    CHECK(parse_scheduler_config(text, &s, &why) == Status::kInvalidValue);
    CHECK_THAT(why, Catch::Contains(mention));
    CHECK(s.policy == "best-effort");
  }
}

TEST_CASE("config: flags override the file") {
  const std::string path = temp_file(R"({"policy": "best-effort", "slice_ms": 5, "weights": {"a": 2}})");
  SchedulerFlags flags;
  flags.config_file = path;
  SchedulerSettings s;
  std::string why;
  REQUIRE(ok(resolve_scheduler_settings(flags, &s, &why)));
  CHECK(s.policy == "best-effort");
  CHECK(s.slice_ms == 5.0);
  flags.slice_ms = 1.0;
  REQUIRE(ok(resolve_scheduler_settings(flags, &s, &why)));
  CHECK(s.slice_ms == 1.0);
  CHECK(s.weights.at("a") == 2);
  std::remove(path.c_str());

  CHECK(resolve_scheduler_settings(flags, &s, &why) == Status::kInvalidValue);  // file gone
  CHECK_THAT(why, Catch::Contains(path));
}

TEST_CASE("config: the command-line flags") {
  CLI::App app;
  SchedulerFlags flags;
  add_scheduler_flags(app, &flags);
  const char* argv[] = {"vgpud", "--policy", "fixed-share", "--slice-ms", "4", "--overlap-depth", "2",
                        "--config", "/etc/vgpu/sched.json"};
  REQUIRE_NOTHROW(app.parse(9, argv));
  CHECK(flags.policy == "fixed-share");
  CHECK(flags.slice_ms == 4.0);
  CHECK(flags.overlap_depth == 2u);
  CHECK(flags.config_file == "/etc/vgpu/sched.json");

  CLI::App bad;
  SchedulerFlags f2;
  add_scheduler_flags(bad, &f2);
  const char* argv2[] = {"vgpud", "--slice-ms", "100"};
  CHECK_THROWS(bad.parse(3, argv2));
}

TEST_CASE("config: course ids are stable and stay out of the database's range") {
  CHECK(course_group_id("gpu101") == course_group_id("gpu101"));
  CHECK(course_group_id("gpu101") != course_group_id("gpu102"));
  CHECK((course_group_id("x") & 0xC0000000u) == 0x40000000u);
}
