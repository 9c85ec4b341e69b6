// The quota control behind the admin socket, over a fake loop: every
// operation goes through the one admin table (the daemon's live views too),
// changes apply to connected VMs at once, and bad requests change nothing.
#include "session_world.h"

#include <map>

#include "admin_ops.h"

using namespace vgpu;
using namespace vgpu::host;
using namespace vgpu::host::test;
using nlohmann::json;

namespace {

json ask(World& w, uint32_t uid, const json& request) {
  const json answer = json::parse(w.quotas.handle(uid, request.dump()), nullptr, false);
  REQUIRE(answer.is_object());
  return answer;
}

}  // namespace

TEST_CASE("top lists the connected VMs to an admin", "[quota_control]") {
  World w;
  CHECK(ask(w, 0, {{"op", "top"}})["result"]["tenants"].empty());
  REQUIRE(w.open_channel(1, "a1", kAliceUid) == Status::kSuccess);
  const json top = ask(w, 0, {{"op", "top"}});
  REQUIRE(top["ok"] == true);
  REQUIRE(top["result"]["tenants"].size() == 1);
  CHECK(top["result"]["tenants"][0]["vm"] == "a1");
  CHECK(top["result"]["tenants"][0]["student"] == "alice");
  CHECK(top["result"]["tenants"][0]["course"] == "cs101");
}

TEST_CASE("the daemon's status is for admins only", "[quota_control]") {
  World w;
  w.quotas.set_status_source([] { return json{{"from", "the daemon"}}; });
  const json as_root = ask(w, 0, {{"op", "status"}});
  CHECK(as_root["ok"] == true);
  CHECK(as_root["result"]["from"] == "the daemon");
  const json as_teacher = ask(w, kTeacherUid, {{"op", "status"}});
  CHECK(as_teacher["ok"] == false);
  CHECK_THAT(as_teacher["error"].get<std::string>(), Catch::Contains("only admins"));
}

TEST_CASE("usage.flush writes the ledger before it answers", "[quota_control]") {
  World w;
  CHECK(ask(w, 0, {{"op", "usage.flush"}})["ok"] == false);  // no flusher given
  w.quotas.set_flush([&] { return w.usage.flush(); });
  REQUIRE(w.open_channel(1, "a1", kAliceUid) == Status::kSuccess);
  REQUIRE(w.call(1, proto::DeviceSynchronizeRequest{}).status() == Status::kSuccess);
  CHECK(ask(w, kTeacherUid, {{"op", "usage.flush"}})["ok"] == true);
  std::vector<policy::UsageRecord> rows;
  REQUIRE(w.ledger->usage_rows(0, kHour + 7200, &rows).ok());
  CHECK(rows.size() == 1);
}

TEST_CASE("a weight set by an admin applies to the connected VM at once", "[quota_control]") {
  World w;
  REQUIRE(w.open_channel(1, "a1", kAliceUid) == Status::kSuccess);
  const scheduler::TenantId a1 = w.tenant_of("a1");
  REQUIRE(w.dispatcher->tenant_params(a1)->weight == 1);
  const json set = ask(w, 0, {{"op", "quota.set"}, {"kind", "student"}, {"name", "alice"},
                              {"weight", 5}});
  REQUIRE(set["ok"] == true);
  CHECK(w.dispatcher->tenant_params(a1)->weight == 5);
}

TEST_CASE("a placement set on a course reaches its connected VMs, and a bad one is refused",
          "[quota_control]") {
  World w;
  std::map<scheduler::TenantId, std::optional<policy::Placement>> told;
  w.quotas.set_placement_sink(
      [&](scheduler::TenantId t, std::optional<policy::Placement> p) { told[t] = p; });
  REQUIRE(w.open_channel(1, "a1", kAliceUid) == Status::kSuccess);
  const scheduler::TenantId a1 = w.tenant_of("a1");
  REQUIRE(told.count(a1));
  CHECK_FALSE(told[a1].has_value());  // the host's, until a quota says otherwise
  const json bad =
      ask(w, 0,
          {{"op", "quota.set"}, {"kind", "course"}, {"name", "cs101"}, {"placement", "sideways"}});
  CHECK(bad["ok"] == false);
  CHECK_THAT(bad["error"].get<std::string>(), Catch::Contains("spread or pack"));
  CHECK_FALSE(told[a1].has_value());
  const json set =
      ask(w, kTeacherUid,
          {{"op", "quota.set"}, {"kind", "course"}, {"name", "cs101"}, {"placement", "pack"}});
  REQUIRE(set["ok"] == true);
  CHECK(told[a1] == std::optional<policy::Placement>(policy::Placement::kPack));
  const json shown = ask(w, 0, {{"op", "quota.show"}, {"kind", "student"}, {"name", "alice"}});
  CHECK_THAT(shown.dump(), Catch::Contains("\"placement\":\"pack\""));
}

TEST_CASE("a VM whose cap no GPU can hold is refused with why, and let in once it is lowered",
          "[quota_control]") {
  World w;
  w.quotas.set_cap_check([](uint64_t cap) {
    return cap > (1ull << 30) ? Result::unavailable("too big for these GPUs") : Result{};
  });
  REQUIRE(
      ask(w, kTeacherUid,
          {{"op", "quota.set"}, {"kind", "course"}, {"name", "cs101"}, {"memory", "2GiB"}})["ok"] ==
      true);
  std::string why;
  CHECK(w.open_channel(1, "a1", kAliceUid, &why) != Status::kSuccess);
  CHECK_THAT(why, Catch::Contains("too big for these GPUs") && Catch::Contains("quota set"));
  REQUIRE(ask(w, kTeacherUid,
              {{"op", "quota.set"},
               {"kind", "course"},
               {"name", "cs101"},
               {"memory", "512MiB"}})["ok"] == true);
  CHECK(w.open_channel(2, "a1", kAliceUid) == Status::kSuccess);
}

TEST_CASE("a bad request is answered with why and changes nothing", "[quota_control]") {
  World w;
  REQUIRE(w.open_channel(1, "a1", kAliceUid) == Status::kSuccess);
  const scheduler::TenantId a1 = w.tenant_of("a1");
  for (const char* line : {"not json", "[1]", R"({"op": 1})", R"({"op": "no.such.op"})",
                           R"({"op": "quota.set", "kind": "student", "name": "alice",
                               "weight": "heavy"})"}) {
    CAPTURE(line);
    const json answer = json::parse(w.quotas.handle(0, line), nullptr, false);
    REQUIRE(answer.is_object());
    CHECK(answer["ok"] == false);
    CHECK_FALSE(answer["error"].get<std::string>().empty());
  }
  CHECK(w.dispatcher->tenant_params(a1)->weight == 1);
  // A student's login is no admin or teacher: it may not change a quota, theirs included.
  const json as_student = ask(w, kAliceUid, {{"op", "quota.set"}, {"kind", "student"},
                                             {"name", "alice"}, {"weight", 9}});
  CHECK(as_student["ok"] == false);
  CHECK(w.dispatcher->tenant_params(a1)->weight == 1);
}

TEST_CASE("without the daemon (vgpuctl --db), its live views say they need it", "[quota_control]") {
  World w;
  for (const char* op : {"top", "status", "usage.flush"}) {
    CAPTURE(op);
    const admin::OpResult r = admin::execute(*w.admin_store, root(), {{"op", op}}, kHour);
    CHECK(r.answer["ok"] == false);
    CHECK_THAT(r.answer["error"].get<std::string>(), Catch::Contains("running daemon"));
    CHECK_FALSE(admin::is_change(op));
  }
}

TEST_CASE("the config file's pin wins over the store's weight, and lifting it restores it",
          "[quota_control]") {
  World w;
  REQUIRE(w.open_channel(1, "a1", kAliceUid) == Status::kSuccess);
  const scheduler::TenantId a1 = w.tenant_of("a1");
  REQUIRE(ask(w, 0, {{"op", "quota.set"}, {"kind", "student"}, {"name", "alice"},
                     {"weight", 5}})["ok"] == true);
  scheduler::ParamsOverride pin;
  pin.weight = 7;
  w.quotas.pin(a1, pin);
  CHECK(w.dispatcher->tenant_params(a1)->weight == 7);
  // A change in the store applies under the pin: the pinned field stays.
  REQUIRE(ask(w, 0, {{"op", "quota.set"}, {"kind", "student"}, {"name", "alice"},
                     {"weight", 6}})["ok"] == true);
  CHECK(w.dispatcher->tenant_params(a1)->weight == 7);
  w.quotas.pin(a1, {});
  CHECK(w.dispatcher->tenant_params(a1)->weight == 6);

  // A pin set while the VM is away applies when it comes back.
  w.sessions->on_close(1, nullptr);
  REQUIRE_FALSE(w.dispatcher->tenant_params(a1).has_value());
  w.quotas.pin(a1, pin);
  REQUIRE(w.open_channel(2, "a1", kAliceUid) == Status::kSuccess);
  CHECK(w.dispatcher->tenant_params(a1)->weight == 7);
}
