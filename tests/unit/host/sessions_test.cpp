// The session layer over a fake loop: who is admitted as a VM, calls answered
// at once or queued and answered from the dispatcher, a client id the channel
// cannot have, a VM seen for the first time, and a channel's close releasing
// what its sessions held.
#include <sqlite3.h>

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

TEST_CASE("a usage batch the database refuses is set aside; the batches after it are written",
          "[sessions]") {
  World w;
  const std::string spool_path = w.dir.path + "/spool.db";
  std::unique_ptr<policy::UsageSpool> spool;
  REQUIRE(policy::open_usage_spool(spool_path, &spool).ok());
  // Kept by an earlier run against another database: this one has no VM 999999.
  policy::UsageRecord stray{999999, kHour, 50, 1, 0, 0, 0};
  stray.host = "node1";
  REQUIRE(spool->put(1, std::vector{stray}).ok());
  UsageFlusher::HostIdentity me;
  me.name = "node1";
  me.backend = "sim";
  w.usage.set_host(me);
  w.usage.set_spool(spool.get());
  w.usage.start();
  REQUIRE(w.open_channel(1, "a1", kAliceUid) == Status::kSuccess);
  REQUIRE(w.call(1, proto::DeviceSynchronizeRequest{}).status() == Status::kSuccess);
  CHECK(w.usage.flush().ok());  // nothing waits: the refused batch is out of the queue
  std::vector<policy::UsageRecord> rows;
  REQUIRE(w.ledger->usage_rows(0, kHour + 4 * 3600, &rows).ok());
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].tenant == w.tenant_of("a1"));
  int64_t batches = -1, max_seq = 0;
  REQUIRE(spool->pending(&batches, &max_seq).ok());
  CHECK(batches == 0);
  w.usage.stop();  // before the spool goes
  // Kept for an admin, with the reason.
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(spool_path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  REQUIRE(sqlite3_prepare_v2(db,
                             "SELECT (SELECT count(*) FROM set_aside WHERE tenant = 999999), "
                             "(SELECT why FROM set_aside_why WHERE seq = 1)",
                             -1, &s, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(s) == SQLITE_ROW);
  CHECK(sqlite3_column_int(s, 0) == 1);
  const auto* why = reinterpret_cast<const char*>(sqlite3_column_text(s, 1));
  CHECK_THAT(std::string(why ? why : ""), Catch::Contains("refuses this usage batch"));
  sqlite3_finalize(s);
  sqlite3_close(db);
}
