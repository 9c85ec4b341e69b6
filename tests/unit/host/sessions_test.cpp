// The session layer over a fake loop: who is admitted as a VM, calls answered
// at once or queued and answered from the dispatcher, a client id the channel
// cannot have, a VM seen for the first time, and a channel's close releasing
// what its sessions held.
#include "session_world.h"

using namespace vgpu;
using namespace vgpu::host;
using namespace vgpu::host::test;

namespace {

template <class Pred>
bool eventually(World& w, Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    w.sessions->on_wake();  // as the loop thread would between passes
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace

TEST_CASE("the student's login runs as their VM; its calls are answered", "[sessions]") {
  World w;
  REQUIRE(w.open_channel(1, "a1", kAliceUid) == Status::kSuccess);

  const Reply count = w.call(1, proto::GetDeviceCountRequest{});
  CHECK(count.status() == Status::kSuccess);
  CHECK(count.as<proto::GetDeviceCountReply>().count == 1);

  const Reply alloc = w.call(1, proto::MallocRequest{1 << 20});
  REQUIRE(alloc.status() == Status::kSuccess);
  CHECK(alloc.as<proto::MallocReply>().dptr != 0);

  // The VM's process, as `vgpu-smi` lists it: this one, holding the block.
  std::vector<executor::TenantProcess> procs;
  REQUIRE(w.sessions->processes(w.tenant_of("a1"), &procs) == Status::kSuccess);
  REQUIRE(procs.size() == 1);
  CHECK(procs[0].pid == getpid());
  CHECK(procs[0].bytes >= (1u << 20));
}

TEST_CASE("another user's program may not run as a student's VM", "[sessions]") {
  World w;
  std::string why;
  CHECK(w.open_channel(1, "a1", kAliceUid + 1, &why) == Status::kNotPermitted);
  CHECK_THAT(why, Catch::Contains("uid 4243") && Catch::Contains("a1"));
  // Nothing of it stays: the same channel id opens for the right user.
  CHECK(w.open_channel(1, "a1", kAliceUid) == Status::kSuccess);
}

TEST_CASE("queued work goes to the dispatcher when the burst ends, and is answered from it",
          "[sessions]") {
  World w;
  REQUIRE(w.open_channel(1, "a1", kAliceUid) == Status::kSuccess);
  REQUIRE(w.call(1, proto::GetDeviceCountRequest{}).status() == Status::kSuccess);  // a context

  const uint64_t id = w.send(1, proto::DeviceSynchronizeRequest{});
  // Held with the rest of the burst: the dispatcher has not seen it.
  CHECK_FALSE(w.loop.replied(1, id));
  CHECK(w.dispatcher->usage(w.tenant_of("a1")).commands == 0);
  w.end_burst(1);
  const Reply done = w.loop.wait_reply(*w.sessions, 1, id);
  CHECK(done.status() == Status::kSuccess);
  CHECK(w.dispatcher->usage(w.tenant_of("a1")).commands == 1);
}

TEST_CASE("a client id a simulated VM cannot have is refused and counted", "[sessions]") {
  World w;
  REQUIRE(w.open_channel(1, "a1", kAliceUid) == Status::kSuccess);
  const Reply r = w.call(1, proto::GetDeviceCountRequest{}, /*client=*/7);
  CHECK(r.status() == Status::kInvalidValue);
  CHECK(w.sessions->counters().snapshot()[w.tenant_of("a1")].malformed == 1);
  // The channel still serves its one process.
  CHECK(w.call(1, proto::GetDeviceCountRequest{}).status() == Status::kSuccess);
}

TEST_CASE("a VM never seen before is registered off the loop thread, then served", "[sessions]") {
  World w;
  scheduler::TenantId before = 0;
  REQUIRE(w.store->find_vm("lab7", &before).ok());
  REQUIRE(before == 0);
  // The daemon's own user may run any VM; an unassigned VM runs by default.
  REQUIRE(w.open_channel(1, "lab7", static_cast<uint32_t>(geteuid())) == Status::kSuccess);
  // Its ring is not read while the registration runs; then it is served.
  CHECK_FALSE(w.sessions->accepting(1));
  w.loop.run_wakes_until(*w.sessions, [&] { return w.sessions->accepting(1); });
  const Reply r = w.call(1, proto::GetDeviceCountRequest{});
  CHECK(r.status() == Status::kSuccess);
  CHECK(w.tenant_of("lab7") != 0);
}

TEST_CASE("closing a channel releases its device memory and its place in the dispatcher",
          "[sessions]") {
  World w;
  REQUIRE(w.open_channel(1, "a1", kAliceUid) == Status::kSuccess);
  REQUIRE(w.call(1, proto::MallocRequest{4 << 20}).status() == Status::kSuccess);
  const scheduler::TenantId a1 = w.tenant_of("a1");
  REQUIRE(w.backend->tenant_memory(a1).used >= (4u << 20));
  REQUIRE(w.dispatcher->tenant_params(a1).has_value());

  w.sessions->on_close(1, nullptr);
  CHECK(eventually(w, [&] { return w.backend->tenant_memory(a1).used == 0; }));
  CHECK(eventually(w, [&] { return !w.dispatcher->tenant_params(a1).has_value(); }));
  std::vector<executor::TenantProcess> procs;
  REQUIRE(w.sessions->processes(a1, &procs) == Status::kSuccess);
  CHECK(procs.empty());
}

TEST_CASE("the usage flusher writes what ran into its hour's bucket, once", "[sessions]") {
  World w;
  REQUIRE(w.open_channel(1, "a1", kAliceUid) == Status::kSuccess);
  REQUIRE(w.call(1, proto::DeviceSynchronizeRequest{}).status() == Status::kSuccess);
  const auto rows = [&] {
    std::vector<policy::UsageRecord> out;
    REQUIRE(w.ledger->usage_rows(0, kHour + 4 * 3600, &out).ok());
    return out;
  };

  CHECK(w.usage.flush().ok());
  std::vector<policy::UsageRecord> written = rows();
  REQUIRE(written.size() == 1);
  CHECK(written[0].tenant == w.tenant_of("a1"));
  CHECK(written[0].interval_start == kHour);

  // The next hour: what ran since goes to a bucket of its own.
  REQUIRE(w.call(1, proto::DeviceSynchronizeRequest{}).status() == Status::kSuccess);
  w.wall += 3600;
  CHECK(w.usage.flush().ok());
  written = rows();
  REQUIRE(written.size() == 2);
  CHECK(written[1].interval_start == kHour + 3600);

  // Nothing new ran: a flush an hour later writes no row.
  w.wall += 3600;
  CHECK(w.usage.flush().ok());
  CHECK(rows().size() == 2);
}
