// Live changes: a reloaded config file switches the policy and re-pins VM
// weights through the dispatcher; a bad one changes nothing.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <unistd.h>

#include "scheduler_control.h"
#include "vgpu/executor/backend.h"

using namespace vgpu;
using namespace vgpu::daemon;

namespace {

// A dispatcher needs a backend; these tests never run work.
class NoBackend final : public executor::Backend {
 public:
  std::string_view name() const override { return "none"; }
  const executor::DeviceInfo& device() const override { return info_; }
  Status create_context(executor::TenantId, executor::ContextId*) override { return Status::kSuccess; }
  void destroy_context(executor::ContextId) override {}
  void set_memory_cap(executor::TenantId, uint64_t) override {}
  executor::TenantMemory tenant_memory(executor::TenantId) const override { return {}; }
  Status mem_alloc(executor::ContextId, uint64_t, uint64_t*) override { return Status::kSuccess; }
  Status mem_info(executor::ContextId, uint64_t*, uint64_t*) override { return Status::kSuccess; }
  Status stream_create(executor::ContextId, uint32_t, int32_t, executor::Handle*) override { return Status::kSuccess; }
  Status stream_query(executor::ContextId, executor::Handle) override { return Status::kSuccess; }
  Status event_create(executor::ContextId, uint32_t, executor::Handle*) override { return Status::kSuccess; }
  Status event_query(executor::ContextId, executor::Handle) override { return Status::kSuccess; }
  Status event_elapsed(executor::ContextId, executor::Handle, executor::Handle, int64_t*) override { return Status::kSuccess; }
  Status module_load(executor::ContextId, std::span<const uint8_t>, executor::Handle*) override { return Status::kSuccess; }
  Status function_get(executor::ContextId, executor::Handle, std::string_view, executor::Handle*, executor::FunctionInfo*) override { return Status::kSuccess; }
  Status var_get(executor::ContextId, executor::Handle, std::string_view, uint64_t, uint64_t*) override { return Status::kSuccess; }
  Status func_attributes(executor::ContextId, executor::Handle, executor::FunctionAttributes*) override { return Status::kSuccess; }
  Status accept(const executor::Work&) override { return Status::kSuccess; }
  executor::ExecResult execute(const executor::Work&) override { return {}; }
  void discard(const executor::Work&) override {}

 private:
  executor::DeviceInfo info_;
};

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
};

}  // namespace

TEST_CASE("control: the dispatcher starts with the configured policy and VM pins") {
  Fixture f;
  f.write(R"({"policy": "fixed-share", "weights": {"alice": 5}})");
  SchedulerFlags flags;
  flags.config_file = f.path;
  SchedulerControl control(flags);
  std::string why;
  REQUIRE(ok(control.load(&why)));
  scheduler::Dispatcher d(&f.backend, control.make_policy(), &f.gate, &f.clock,
                          control.dispatcher_config(), [](auto&, auto&) {}, [] {});
  control.attach(&d);
  CHECK(d.policy_name() == "fixed-share");
  d.add_tenant(1, {});
  d.add_tenant(2, {});
  control.vm_opened(1, "alice");
  control.vm_opened(2, "bob");
  CHECK(d.effective_params(1)->weight == 5);
  CHECK(d.effective_params(2)->weight == 1);
}

TEST_CASE("control: a reload applies changes live, and a bad file changes nothing") {
  Fixture f;
  f.write(R"({"weights": {"alice": 2}})");
  SchedulerFlags flags;
  flags.config_file = f.path;
  SchedulerControl control(flags);
  std::string why;
  REQUIRE(ok(control.load(&why)));
  scheduler::Dispatcher d(&f.backend, control.make_policy(), &f.gate, &f.clock,
                          control.dispatcher_config(), [](auto&, auto&) {}, [] {});
  control.attach(&d);
  d.add_tenant(1, {});
  control.vm_opened(1, "alice");
  CHECK(d.policy_name() == "fair");
  CHECK(d.effective_params(1)->weight == 2);

  f.write(R"({"policy": "best-effort", "slice_ms": 4, "overlap_depth": 3,
              "courses": {"c1": {"weight": 2, "vms": ["alice"]}}})");
  REQUIRE(ok(control.reload(&why)));
  CHECK(d.policy_name() == "best-effort");
  CHECK(d.overlap_depth() == 3);
  CHECK(d.effective_params(1)->weight == 1);  // the weight pin is gone
  CHECK(d.effective_params(1)->group == course_group_id("c1"));
  CHECK(control.settings().slice_ms == 4.0);

  f.write(R"({"policy": "fair", "slice_ms": 400})");
  CHECK(control.reload(&why) == Status::kInvalidValue);
  CHECK_THAT(why, Catch::Contains("slice"));
  CHECK(d.policy_name() == "best-effort");
  CHECK(control.settings().slice_ms == 4.0);

  // The command line keeps winning across reloads.
  SchedulerFlags pinned = flags;
  pinned.policy = "fixed-share";
  SchedulerControl control2(pinned);
  f.write(R"({"policy": "fair"})");
  REQUIRE(ok(control2.load(&why)));
  CHECK(control2.settings().policy == "fixed-share");
}

TEST_CASE("control: refusing to start on a bad file") {
  Fixture f;
  f.write("not json");
  SchedulerFlags flags;
  flags.config_file = f.path;
  SchedulerControl control(flags);
  std::string why;
  CHECK(control.load(&why) == Status::kInvalidValue);
  CHECK_THAT(why, Catch::Contains(f.path));
}
