// vgpud's scheduling settings: the config file format, its errors, and how
// the file and the flags combine.
#include <catch2/catch.hpp>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <unistd.h>

#include "config_file.h"
#include "scheduler_config.h"

using namespace vgpu;
using namespace vgpu::daemon;

namespace {

Result parse(const std::string& text, SchedulerSettings* s) {
  *s = SchedulerSettings{};
  return parse_scheduler_config(text, s);
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
  REQUIRE(parse("{}", &s).ok());
  CHECK(s.policy == "fair");
  CHECK(s.slice_ms == 2.0);
  CHECK(s.overlap_depth == 4);
  CHECK(policy_options(s).slice == 2 * scheduler::kMillisecond);
}

TEST_CASE("config: a full file is read") {
  SchedulerSettings s;
  REQUIRE(parse(R"({"policy": "fixed-share", "slice_ms": 0.5, "overlap_depth": 6,
                       "weights": {"alice": 4, "bob": 1},
                       "courses": {"gpu101": {"weight": 3, "vms": ["alice", "carol"]}}})",
                &s)
              .ok());
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
      {"{\"a\": 44e444444444}", "JSON"},  // a number too big: nlohmann throws out_of_range
      {"44e444444444", "TOML"},  // not an object: read as vgpud.toml, which it is not either
      {R"({"slice_ms": 1e999})", "JSON"},
      {R"({"slice_ms": 5.7e55})", "slice"},  // fuzz_config: did not fit in nanoseconds
      {"[1, 2]", "TOML"},
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
    INFO(text);
    const Result r = parse_scheduler_config(text, &s);
    CHECK(r.is(Result::Code::kInvalidArgument));
    CHECK_THAT(r.message(), Catch::Contains(mention));
    CHECK(s.policy == "best-effort");
  }
}

TEST_CASE("config: flags override the file") {
  const std::string path = temp_file(R"({"policy": "best-effort", "slice_ms": 5, "weights": {"a": 2}})");
  SchedulerFlags flags;
  flags.config_file = path;
  SchedulerSettings s;
  REQUIRE(resolve_scheduler_settings(flags, &s).ok());
  CHECK(s.policy == "best-effort");
  CHECK(s.slice_ms == 5.0);
  flags.slice_ms = 1.0;
  REQUIRE(resolve_scheduler_settings(flags, &s).ok());
  CHECK(s.slice_ms == 1.0);
  CHECK(s.weights.at("a") == 2);
  std::remove(path.c_str());

  const Result gone = resolve_scheduler_settings(flags, &s);  // the file is gone
  CHECK(gone.is(Result::Code::kUnavailable));
  CHECK_THAT(gone.message(), Catch::Contains(path));
}

TEST_CASE("config: the command-line flags") {
  CLI::App app;
  SchedulerFlags flags;
  add_scheduler_flags(app, &flags);
  const char* argv[] = {"vgpud", "--policy", "fixed-share", "--slice-ms", "4", "--overlap-depth", "2"};
  REQUIRE_NOTHROW(app.parse(7, argv));
  CHECK(flags.policy == "fixed-share");
  CHECK(flags.slice_ms == 4.0);
  CHECK(flags.overlap_depth == 2u);

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

// --- vgpud.toml (config_file.h) ---

TEST_CASE("config: vgpud.toml's scheduling keys and tables are read as the JSON file's") {
  SchedulerSettings s;
  REQUIRE(parse(R"(# a class's host
backend = "sim"
policy = "fixed-share"
slice-ms = 0.5
overlap-depth = 6
[weights]
alice = 4
bob = 1
[courses.gpu101]
weight = 3
vms = ["alice", "carol"]
)",
                &s)
              .ok());
  CHECK(s.policy == "fixed-share");
  CHECK(policy_options(s).slice == 500 * scheduler::kMicrosecond);
  CHECK(s.overlap_depth == 6);
  CHECK(s.weights.at("alice") == 4);
  const auto alice = pin_for_vm(s, "alice");
  CHECK(alice.group == course_group_id("gpu101"));
  CHECK(alice.group_weight == 3u);
}

TEST_CASE("config: vgpud.toml keeps every other key as a flag's values") {
  ConfigFile f;
  REQUIRE(parse_config_file(R"(
backend = "sim"
sim-memory-gib = 8
watchdog-s = 2.5
sim-kernels = ["/opt/a.so", "/opt/b.so"]
policy = "fair"
)",
                            &f)
              .ok());
  CHECK(f.flags.at("backend") == std::vector<std::string>{"sim"});
  CHECK(f.flags.at("sim-memory-gib") == std::vector<std::string>{"8"});
  CHECK(f.flags.at("watchdog-s") == std::vector<std::string>{"2.5"});
  CHECK(f.flags.at("sim-kernels") == std::vector<std::string>{"/opt/a.so", "/opt/b.so"});
  CHECK(f.flags.count("policy") == 0);  // a scheduling key: re-read on SIGHUP
  CHECK(f.scheduling["policy"] == "fair");
}

TEST_CASE("config: vgpud.toml's mistakes name the line or the key") {
  const std::pair<const char*, const char*> cases[] = {
      {"backend = \"sim\"\nslice-ms = ", "line 2"},
      {"x = [1, [2]]", "x: a list of plain values"},
      {"[server]\nport = 1", "[server] is no table"},
      {"slice-ms = \"fast\"", "\"slice-ms\" must be a number"},
      {"overlap-depth = 99", "\"overlap-depth\" must be between"},
      {"[weights]\nalice = 0", "alice"},
      {"[courses.c]\nwieght = 2", "wieght"},
  };
  for (const auto& [text, mention] : cases) {
    SchedulerSettings s;
    s.policy = "best-effort";
    INFO(text);
    const Result r = parse_scheduler_config(text, &s);
    CHECK(r.is(Result::Code::kInvalidArgument));
    CHECK_THAT(r.message(), Catch::Contains(mention));
    CHECK(s.policy == "best-effort");
  }
}

TEST_CASE("config: vgpud.toml sets any flag through CLI11 and the command line wins") {
  CLI::App app;
  std::string backend = "auto";
  uint64_t gib = 16;
  std::vector<std::string> kernels;
  SchedulerFlags flags;
  app.add_option("--backend", backend);
  app.add_option("--sim-memory-gib", gib);
  app.add_option("--sim-kernels", kernels);
  add_scheduler_flags(app, &flags);
  app.config_formatter(toml_flag_reader(flag_names(app)));
  app.allow_config_extras(false);
  app.set_config("--config");
  const std::string path = temp_file(
      "backend = \"sim\"\nsim-memory-gib = 4\nsim-kernels = [\"a.so\", \"b.so\"]\nslice-ms = 3\n");
  const std::string arg = "--config=" + path;
  const char* argv[] = {"vgpud", arg.c_str(), "--sim-memory-gib", "2"};
  REQUIRE_NOTHROW(app.parse(4, argv));
  CHECK(backend == "sim");
  CHECK(gib == 2);  // the command line's
  CHECK(kernels == std::vector<std::string>{"a.so", "b.so"});
  // The scheduling keys are the file's business (re-read on SIGHUP), not
  // flags: a flag set from the file would win over the file's next version.
  CHECK_FALSE(flags.slice_ms.has_value());
  std::remove(path.c_str());

  CLI::App strict;
  strict.add_option("--backend", backend);
  strict.config_formatter(toml_flag_reader(flag_names(strict)));
  strict.allow_config_extras(false);
  strict.set_config("--config");
  const std::string bad = temp_file("backend = \"sim\"\nbakend = \"cuda\"\n");
  const std::string bad_arg = "--config=" + bad;
  const char* argv2[] = {"vgpud", bad_arg.c_str()};
  try {
    strict.parse(2, argv2);
    FAIL("a misspelt key was accepted");
  } catch (const CLI::ParseError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("'bakend' is no vgpud setting"));
  }
  std::remove(bad.c_str());
}

TEST_CASE("config: a reload names what only a restart applies, and keys that are no flag") {
  ConfigFile before, after;
  REQUIRE(parse_config_file("backend = \"sim\"\nsim-memory-gib = 4\ndb = \"/a.db\"\nslice-ms = 2\n",
                            &before)
              .ok());
  REQUIRE(parse_config_file("backend = \"sim\"\nsim-memory-gib = 8\nlog-level = \"debug\"\n"
                            "slice-ms = 3\nbogus = 1\n",
                            &after)
              .ok());
  const ConfigDiff d =
      diff_flags(before, after, {"backend", "sim-memory-gib", "db", "log-level", "slice-ms"});
  CHECK(d.changed == std::vector<std::string>{"db", "log-level", "sim-memory-gib"});
  CHECK(d.unknown == std::vector<std::string>{"bogus"});  // slice-ms: applied live, not listed
}

TEST_CASE("config: the default file is beside vgpud's install prefix") {
  CHECK(default_config_path("/usr/bin/vgpud") == "/etc/vgpu/vgpud.toml");
  CHECK(default_config_path("/usr/local/bin/vgpud") == "/usr/local/etc/vgpu/vgpud.toml");
  CHECK(default_config_path("/opt/vgpu/bin/vgpud") == "/opt/vgpu/etc/vgpu/vgpud.toml");
  CHECK(default_config_path("/home/me/vgpu/build/bin/vgpud") ==
        "/home/me/vgpu/build/etc/vgpu/vgpud.toml");
}
