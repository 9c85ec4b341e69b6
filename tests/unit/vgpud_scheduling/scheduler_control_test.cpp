// Live changes: a reloaded config file switches the dispatcher's policy and
// re-pins VM weights (handed to the pin sink: vgpud's quota control, which
// merges them with the store's); a bad one changes nothing.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <map>
#include <unistd.h>

#include "quiet_backend.h"
#include "scheduler_control.h"

using namespace vgpu;
using namespace vgpu::daemon;

namespace {

// A dispatcher needs a backend; these tests never run work.
using NoBackend = test::QuietBackend;

struct Fixture {
  std::string path;
  NoBackend backend;
  scheduler::UnlimitedGate gate;
  scheduler::SteadyClock clock;

  Fixture() {
    char name[] = "/tmp/vgpu-sched-control-XXXXXX";
    const int fd = mkstemp(name);
    close(fd);
    path = name;
  }
  ~Fixture() { std::remove(path.c_str()); }
  void write(const std::string& text) { std::ofstream(path, std::ios::trunc) << text; }

  // The last pin handed on per tenant.
  std::map<scheduler::TenantId, scheduler::ParamsOverride> pins;
  SchedulerControl::PinSink sink() {
    return [this](scheduler::TenantId t, const scheduler::ParamsOverride& p) { pins[t] = p; };
  }
};

}  // namespace

TEST_CASE("control: the dispatcher starts with the configured policy and VM pins") {
  Fixture f;
  f.write(R"({"policy": "fixed-share", "weights": {"alice": 5}})");
  SchedulerFlags flags;
  flags.config_file = f.path;
  SchedulerControl control(flags);
  REQUIRE(control.load().ok());
  scheduler::Dispatcher d(&f.backend, control.make_policy(), &f.gate, &f.clock,
                          control.dispatcher_config(), [](auto&, auto&) {}, [] {});
  scheduler::DispatcherGroup group({&d}, {});
  control.attach(&group, f.sink());
  CHECK(d.policy_name() == "fixed-share");
  control.vm_opened(1, "alice");
  control.vm_opened(2, "bob");
  CHECK(f.pins[1].weight == 5u);
  CHECK(f.pins[2].empty());
}

TEST_CASE("control: a reload applies changes live, and a bad file changes nothing") {
  Fixture f;
  f.write(R"({"weights": {"alice": 2}})");
  SchedulerFlags flags;
  flags.config_file = f.path;
  SchedulerControl control(flags);
  REQUIRE(control.load().ok());
  scheduler::Dispatcher d(&f.backend, control.make_policy(), &f.gate, &f.clock,
                          control.dispatcher_config(), [](auto&, auto&) {}, [] {});
  scheduler::DispatcherGroup group({&d}, {});
  control.attach(&group, f.sink());
  control.vm_opened(1, "alice");
  CHECK(d.policy_name() == "fair");
  CHECK(f.pins[1].weight == 2u);

  f.write(R"({"policy": "best-effort", "slice_ms": 4, "overlap_depth": 3,
              "courses": {"c1": {"weight": 2, "vms": ["alice"]}}})");
  REQUIRE(control.reload().ok());
  CHECK(d.policy_name() == "best-effort");
  CHECK(d.overlap_depth() == 3);
  CHECK_FALSE(f.pins[1].weight.has_value());  // the weight pin is gone
  CHECK(f.pins[1].group == course_group_id("c1"));
  CHECK(control.settings().slice_ms == 4.0);

  f.write(R"({"policy": "fair", "slice_ms": 400})");
  const Result bad = control.reload();
  CHECK(bad.is(Result::Code::kInvalidArgument));
  CHECK_THAT(bad.message(), Catch::Contains("slice"));
  CHECK(d.policy_name() == "best-effort");
  CHECK(control.settings().slice_ms == 4.0);

  // The command line keeps winning across reloads.
  SchedulerFlags pinned = flags;
  pinned.policy = "fixed-share";
  SchedulerControl control2(pinned);
  f.write(R"({"policy": "fair"})");
  REQUIRE(control2.load().ok());
  CHECK(control2.settings().policy == "fixed-share");
}

TEST_CASE("control: refusing to start on a bad file") {
  Fixture f;
  f.write("not json");
  SchedulerFlags flags;
  flags.config_file = f.path;
  SchedulerControl control(flags);
  const Result r = control.load();
  CHECK(r.is(Result::Code::kInvalidArgument));
  CHECK_THAT(r.message(), Catch::Contains(f.path));
}
