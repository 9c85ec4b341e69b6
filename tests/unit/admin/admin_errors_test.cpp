// How the admin operations answer a refusal: the store's Result becomes
// {"ok": false, "error": MESSAGE}, the message exactly as the store wrote it,
// whatever its category (vgpuctl prints it and exits 1).
#include <catch2/catch.hpp>

#include "admin_ops.h"
#include "temp_db.h"

using namespace vgpu;
using namespace vgpu::policy;
using namespace vgpu::policy::test;
using nlohmann::json;

namespace {

struct School {
  TempDb db;
  std::unique_ptr<Store> s = db.open();
  Actor tina;

  School() {
    REQUIRE(s);
    REQUIRE(s->add_user(root(), UserRow{0, "tina", 2001, Role::kTeacher, 0}).ok());
    REQUIRE(s->add_user(root(), UserRow{0, "olga", 2002, Role::kTeacher, 0}).ok());
    REQUIRE(s->actor_for_uid(2001, &tina).ok());
    REQUIRE(s->create_course(root(), "cs101", "tina").ok());
    REQUIRE(s->create_course(root(), "ml200", "olga").ok());
  }
  json run(Store& store, const Actor& by, const json& request, bool* changed = nullptr) {
    const admin::OpResult r = admin::execute(store, by, request, 1700000000);
    if (changed) *changed = r.changed;
    return r.answer;
  }
  json run(const Actor& by, const json& request, bool* changed = nullptr) {
    return run(*s, by, request, changed);
  }
};

json refusal(const std::string& why) { return {{"ok", false}, {"error", why}}; }

}  // namespace

TEST_CASE("a refusal answers with the store's message, and changes nothing", "[admin]") {
  School o;
  bool changed = true;
  // kPermissionDenied
  CHECK(o.run(o.tina, {{"op", "student.add"}, {"name", "al"}, {"course", "ml200"}}, &changed) ==
        refusal("permission denied: course 'ml200' is not one of tina's courses"));
  CHECK_FALSE(changed);
  CHECK(o.run(o.tina, {{"op", "quota.set"}, {"kind", "default"}, {"gpu_time", "1h/day"}}) ==
        refusal("permission denied: only admins set the default quota"));
  CHECK(o.run(o.tina, {{"op", "vm.list"}}) ==
        refusal("permission denied: only admins list every VM (teachers: student list)"));
  // kNotFound
  CHECK(o.run(root(), {{"op", "student.remove"}, {"name", "ghost"}}) ==
        refusal("unknown student 'ghost'"));
  CHECK(o.run(root(), {{"op", "student.show"}, {"name", "ghost"}}) ==
        refusal("unknown student 'ghost'"));
  CHECK(o.run(root(), {{"op", "course.show"}, {"name", "nope"}}) ==
        refusal("unknown course 'nope'"));
  // kAlreadyExists, kConflict, kInvalidArgument
  CHECK(o.run(root(), {{"op", "course.create"}, {"name", "cs101"}}) ==
        refusal("course 'cs101' already exists"));
  REQUIRE(o.run(root(), {{"op", "student.add"}, {"name", "al"}, {"course", "cs101"}},
                &changed)["ok"] == true);
  CHECK(changed);
  CHECK(o.run(root(), {{"op", "course.delete"}, {"name", "cs101"}}, &changed) ==
        refusal("course 'cs101' has 1 student(s): remove them first, or delete with --force"));
  CHECK_FALSE(changed);
  CHECK(o.run(root(), {{"op", "course.create"}, {"name", "bad name"}}) ==
        refusal("course name 'bad name' is not valid (1 to 63 of A-Z a-z 0-9 . _ -)"));
}

TEST_CASE("a usage report is refused as the store refuses its students", "[admin]") {
  School o;
  CHECK(o.run(o.tina, {{"op", "usage.report"}, {"course", "ml200"}}) ==
        refusal("permission denied: course 'ml200' is not one of tina's courses"));
  CHECK(o.run(o.tina, {{"op", "usage.report"}, {"course", "ml200"}, {"by", {"day"}}}) ==
        refusal("permission denied: course 'ml200' is not one of tina's courses"));
  CHECK(o.run(root(), {{"op", "usage.report"}, {"student", "ghost"}}) ==
        refusal("unknown student 'ghost'"));
  CHECK(o.run(root(), {{"op", "usage.report"}, {"course", "nope"}, {"by", {"week"}}}) ==
        refusal("unknown course 'nope'"));
  CHECK(o.run(root(), {{"op", "usage.report"}, {"course", "cs101"}})["ok"] == true);
}

TEST_CASE("a store opened read-only refuses every change with one message", "[admin]") {
  School o;
  std::unique_ptr<Store> reader;
  REQUIRE(o.db.open(&reader, {.read_only = true}).ok());
  CHECK(o.run(*reader, root(), {{"op", "course.create"}, {"name", "x"}}) ==
        refusal("the database was opened read-only"));
  CHECK(o.run(*reader, root(), {{"op", "quota.set"}, {"kind", "default"}, {"weight", 2}}) ==
        refusal("the database was opened read-only"));
  CHECK(o.run(*reader, root(), {{"op", "course.list"}})["ok"] == true);
}

TEST_CASE("vm.set: a VM's placement by name, checked, shown by vm.list", "[admin]") {
  School o;
  REQUIRE(o.s->add_student(root(), "al", "cs101", {"al-vm"}).ok());
  bool changed = false;
  CHECK(o.run(o.tina, {{"op", "vm.set"}, {"vm", "al-vm"}, {"placement", "diagonal"}}, &changed) ==
        refusal("placement must be spread, pack or inherit, not 'diagonal'"));
  CHECK_FALSE(changed);
  CHECK(o.run(o.tina, {{"op", "vm.set"}, {"vm", "ghost"}, {"placement", "pack"}}) ==
        refusal("unknown VM 'ghost'"));
  REQUIRE(o.run(o.tina, {{"op", "vm.set"}, {"vm", "al-vm"}, {"placement", "pack"}},
                &changed)["ok"] == true);
  CHECK(changed);  // the daemon applies it to the connected VM's next placement
  json vms = o.run(root(), {{"op", "vm.list"}})["result"];
  REQUIRE(vms.size() == 1);
  CHECK(vms[0]["placement"] == "pack");
  REQUIRE(o.run(root(), {{"op", "vm.set"}, {"vm", "al-vm"}, {"placement", "inherit"}})["ok"] ==
          true);
  vms = o.run(root(), {{"op", "vm.list"}})["result"];
  CHECK(vms[0]["placement"] == "inherit");
}
