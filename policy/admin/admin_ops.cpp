// The admin operations: a default-deny table from op name to handler. Each
// handler validates its arguments, calls the store (which checks the actor's
// role and audits), and shapes the answer.
#include "admin_ops.h"

#include <functional>
#include <map>

#include "quota_json.h"
#include "roster_import.h"
#include "usage_breakdown.h"
#include "usage_report.h"
#include "vgpu/policy/units.h"

namespace vgpu::admin {

using namespace vgpu::policy;

json error_answer(std::string_view why) { return {{"ok", false}, {"error", why}}; }
json error_answer(const Result& refused) { return error_answer(refused.text()); }
json ok_answer(json result) { return {{"ok", true}, {"result", std::move(result)}}; }

namespace {

// Thrown inside this file only, for a missing or mistyped argument; caught in execute().
struct BadRequest {
  std::string why;
};

std::string str(const json& r, const char* key, bool required = true) {
  if (!r.contains(key)) {
    if (required) throw BadRequest{std::string("missing argument '") + key + "'"};
    return "";
  }
  if (!r[key].is_string()) throw BadRequest{std::string("argument '") + key + "' must be a string"};
  return r[key].get<std::string>();
}

bool flag(const json& r, const char* key) {
  if (!r.contains(key)) return false;
  if (!r[key].is_boolean()) throw BadRequest{std::string("argument '") + key + "' must be true or false"};
  return r[key].get<bool>();
}

int64_t integer(const json& r, const char* key) {
  if (!r.contains(key)) return 0;
  if (!r[key].is_number_integer()) throw BadRequest{std::string("argument '") + key + "' must be an integer"};
  return r[key].get<int64_t>();
}

struct Ctx {
  Store& store;
  const Actor& by;
  const json& r;
  int64_t now;
  LiveState* live;
  bool changed = false;

  // The running daemon, for the operations that read its live state.
  LiveState& daemon(std::string_view op) {
    if (!live) {
      throw BadRequest{std::string(op) + " shows the running daemon: ask vgpud (vgpuctl without --db)"};
    }
    return *live;
  }

  json done(const Result& s, json result = json::object()) {
    if (!s.ok()) return error_answer(s);
    return ok_answer(std::move(result));
  }
  json change(const Result& s) {
    changed = s.ok();
    return done(s);
  }
};

QuotaTarget target_of(const json& r) {
  const std::string kind = str(r, "kind");
  if (kind == "default") return {QuotaTarget::Kind::kDefault, ""};
  if (kind == "course") return {QuotaTarget::Kind::kCourse, str(r, "name")};
  if (kind == "student") return {QuotaTarget::Kind::kStudent, str(r, "name")};
  throw BadRequest{"quota target kind must be default, course or student"};
}

json student_json(const StudentRow& s) {
  return {{"name", s.name},
          {"course", s.course},
          {"vms", s.vms},
          {"uid", s.uid < 0 ? json(nullptr) : json(s.uid)},
          {"created_at", s.created_at},
          {"removed", s.removed_at != 0}};
}

// A student's login: a uid (not (uid_t)-1, which means none to the kernel),
// or null for none.
std::optional<uint32_t> student_uid(const json& r) {
  const json& v = r["uid"];
  if (v.is_null()) return std::nullopt;
  if (!v.is_number_unsigned() || v.get<uint64_t>() >= UINT32_MAX) {
    throw BadRequest{"uid must be a whole number below 4294967295, or null"};
  }
  return v.get<uint32_t>();
}

json user_json(const UserRow& u) {
  return {
      {"name", u.name}, {"uid", u.uid}, {"role", role_name(u.role)}, {"created_at", u.created_at}};
}

// One quota level: what it sets, and (for students) what applies.
json quota_level(Ctx& c, const QuotaTarget& t, Result* status) {
  QuotaFields own;
  *status = c.store.get_quota(c.by, t, &own);
  if (!status->ok()) return {};
  json j;
  j["kind"] = t.kind == QuotaTarget::Kind::kDefault  ? "default"
              : t.kind == QuotaTarget::Kind::kCourse ? "course"
                                                     : "student";
  j["name"] = t.name;
  j["set"] = fields_json(own);
  if (t.kind == QuotaTarget::Kind::kDefault) {
    bool refuse = false;
    (void)c.store.refuse_unassigned(&refuse);  // never fails: a missing setting reads as run
    j["effective"] = quota_json(resolve_default_quota(own));
    j["unassigned"] = refuse ? "refuse" : "run";
  } else if (t.kind == QuotaTarget::Kind::kCourse) {
    j["course_weight"] = own.weight.value_or(1);
  }
  return j;
}

json student_detail(Ctx& c, const StudentRow& s) {
  json j = student_json(s);
  // A level that cannot be read shows as nothing set (the student was listed
  // to `by`, so their course is one `by` may see).
  QuotaFields own, course;
  (void)c.store.get_quota(c.by, {QuotaTarget::Kind::kStudent, s.name}, &own);
  (void)c.store.get_quota(c.by, {QuotaTarget::Kind::kCourse, s.course}, &course);
  const Quota q = resolve_student_quota(own, course);
  j["quota_set"] = fields_json(own);
  j["quota"] = quota_json(q);
  const Window w = window_at(q.gpu_time, c.now, TimeZone::find_or_utc(s.time_zone));
  int64_t spent = 0;  // a ledger that cannot be read shows nothing spent
  (void)c.store.ledger_sum(static_cast<uint32_t>(s.id), 0, w.start, w.end, &spent);
  j["period"] = {
      {"start", w.start}, {"end", w.end}, {"used_ns", spent}, {"used", format_duration(spent)}};
  if (!q.gpu_time.unlimited) {
    const int64_t left = w.contains(c.now) ? std::max<int64_t>(0, q.gpu_time.budget_ns - spent) : 0;
    j["period"]["left_ns"] = left;
    j["period"]["left"] = format_duration(left);
  }
  return j;
}

// A breakdown request's "by": a list of day|week|month and student|course
// (at most one of each; no period: the whole span; no grouping: student).
Breakdown breakdown_of(const json& r) {
  if (!r["by"].is_array()) throw BadRequest{"argument 'by' must be a list"};
  Breakdown b;
  bool period = false, group = false;
  for (const json& v : r["by"]) {
    const std::string by = v.is_string() ? v.get<std::string>() : "";
    Calendar p = Calendar::kDay;
    ReportGroup g = ReportGroup::kStudent;
    if (parse_calendar(by, &p)) {
      if (period) throw BadRequest{"'by' names more than one period (day, week or month)"};
      period = true;
      b.period = p;
    } else if (parse_report_group(by, &g)) {
      if (group) throw BadRequest{"'by' names more than one grouping (student or course)"};
      group = true;
      b.group = g;
    } else {
      throw BadRequest{"'by' takes day, week, month, student or course"};
    }
  }
  return b;
}

using Handler = std::function<json(Ctx&)>;

const std::map<std::string, std::pair<bool, Handler>, std::less<>>& table() {
  static const auto* ops = new std::map<std::string, std::pair<bool, Handler>, std::less<>>{
      // The daemon's live state (LiveState): never a change.
      {"top", {false, [](Ctx& c) { return ok_answer(c.daemon("top").top(c.by)); }}},
      {"status",
       {false,
        [](Ctx& c) {
          LiveState& live = c.daemon("status");
          if (c.by.role != Role::kAdmin) {
            return error_answer("permission denied: only admins read the daemon's status");
          }
          return ok_answer(live.status());
        }}},
      // Harmless for anyone: writes now what the flusher would write within
      // its interval (reports read from the file, tests).
      {"usage.flush",
       {false,
        [](Ctx& c) {
          if (const Result r = c.daemon("usage.flush").flush_usage(); !r.ok()) {
            return error_answer(r.message());
          }
          return ok_answer(json{{"flushed", true}});
        }}},
      // The hosts that share this store, as each last reported itself.
      {"hosts.list",
       {false,
        [](Ctx& c) {
          std::vector<HostRow> hosts;
          const Result s = c.store.list_hosts(&hosts);
          json out = json::array();
          for (const HostRow& h : hosts) {
            json gpus = json::parse(h.gpus, nullptr, false);
            if (!gpus.is_array()) gpus = json::array();  // a report it cannot read: no GPUs
            out.push_back({{"name", h.name},
                           {"backend", h.backend},
                           {"started_at", h.started_at},
                           {"last_seen", h.last_seen},
                           {"seen_s_ago", std::max<int64_t>(0, c.now - h.last_seen)},
                           {"gpus", std::move(gpus)}});
          }
          return c.done(s, out);
        }}},
      {"whoami",
       {false,
        [](Ctx& c) {
          return c.done(Result(),
                        {{"uid", c.by.uid}, {"name", c.by.name}, {"role", role_name(c.by.role)}});
        }}},
      {"user.add",
       {true,
        [](Ctx& c) {
          UserRow u;
          u.name = str(c.r, "name");
          if (!c.r.contains("uid") || !c.r["uid"].is_number_unsigned() ||
              c.r["uid"].get<uint64_t>() > UINT32_MAX) {
            throw BadRequest{"uid must be a whole number"};
          }
          u.uid = c.r["uid"].get<uint32_t>();
          const std::string role = str(c.r, "role", false);
          if (!role.empty() && role != "teacher" && role != "admin") {
            throw BadRequest{"role must be teacher or admin"};
          }
          u.role = role == "admin" ? Role::kAdmin : Role::kTeacher;
          return c.change(c.store.add_user(c.by, u));
        }}},
      {"user.remove",
       {true, [](Ctx& c) { return c.change(c.store.remove_user(c.by, str(c.r, "name"))); }}},
      {"user.list",
       {false,
        [](Ctx& c) {
          std::vector<UserRow> users;
          const Result s = c.store.list_users(c.by, &users);
          json out = json::array();
          for (const UserRow& u : users) out.push_back(user_json(u));
          return c.done(s, out);
        }}},
      {"course.create",
       {true,
        [](Ctx& c) {
          const CourseSpec spec{str(c.r, "name"), str(c.r, "teacher", false),
                                str(c.r, "time_zone", false)};
          return c.change(c.store.create_course(c.by, spec));
        }}},
      {"course.set",
       {true,
        [](Ctx& c) {
          const std::string name = str(c.r, "name");
          if (!c.r.contains("time_zone")) throw BadRequest{"nothing to set (time_zone)"};
          return c.change(c.store.set_course_time_zone(c.by, name, str(c.r, "time_zone")));
        }}},
      {"course.delete",
       {true,
        [](Ctx& c) {
          const bool force = flag(c.r, "force");
          return c.change(c.store.delete_course(c.by, str(c.r, "name"), force));
        }}},
      {"course.list",
       {false,
        [](Ctx& c) {
          std::vector<CourseRow> courses;
          const Result s = c.store.list_courses(c.by, &courses);
          json out = json::array();
          for (const CourseRow& r : courses) {
            out.push_back({{"name", r.name},
                           {"teacher", r.teacher},
                           {"students", r.students},
                           {"created_at", r.created_at},
                           {"time_zone", r.time_zone}});
          }
          return c.done(s, out);
        }}},
      {"course.show",
       {false,
        [](Ctx& c) {
          const std::string name = str(c.r, "name");
          std::vector<CourseRow> courses;
          (void)c.store.list_courses(c.by, &courses);  // never fails
          auto it = std::find_if(courses.begin(), courses.end(),
                                 [&](const CourseRow& r) { return r.name == name; });
          std::vector<StudentRow> students;
          Result s = c.store.list_students(c.by, name, false, &students);
          if (!s.ok()) return c.done(s);
          if (it == courses.end()) {
            return c.done(Result::not_found("unknown course '" + name + "'"));
          }
          json j = {{"name", it->name},
                    {"teacher", it->teacher},
                    {"created_at", it->created_at},
                    {"time_zone", it->time_zone}};
          j["quota"] = quota_level(c, {QuotaTarget::Kind::kCourse, name}, &s);
          std::vector<std::string> domains;
          if (s.ok()) s = c.store.course_domains(c.by, name, &domains);
          j["domains"] = domains;
          j["students"] = json::array();
          for (const StudentRow& st : students) j["students"].push_back(student_detail(c, st));
          return c.done(s, j);
        }}},
      {"student.add",
       {true,
        [](Ctx& c) {
          std::vector<std::string> vms;
          if (c.r.contains("vms")) {
            if (!c.r["vms"].is_array()) throw BadRequest{"vms must be a list"};
            for (const json& v : c.r["vms"]) {
              if (!v.is_string()) throw BadRequest{"vms must be names"};
              vms.push_back(v.get<std::string>());
            }
          }
          const std::optional<uint32_t> uid =
              c.r.contains("uid") ? student_uid(c.r) : std::nullopt;  // checked before anything changes
          const std::string name = str(c.r, "name");
          const Result added = c.store.add_student(c.by, name, str(c.r, "course"), vms);
          if (!added.ok() || !uid) return c.change(added);
          return c.change(c.store.set_student_uid(c.by, name, uid));
        }}},
      {"student.import",
       {true, [](Ctx& c) { return import_roster(c.store, c.by, c.r, &c.changed); }}},
      {"student.uid",
       {true,
        [](Ctx& c) {
          if (!c.r.contains("uid")) throw BadRequest{"uid is missing (null: none)"};
          return c.change(c.store.set_student_uid(c.by, str(c.r, "name"), student_uid(c.r)));
        }}},
      {"student.remove",
       {true, [](Ctx& c) { return c.change(c.store.remove_student(c.by, str(c.r, "name"))); }}},
      {"student.bind",
       {true,
        [](Ctx& c) { return c.change(c.store.bind_vm(c.by, str(c.r, "name"), str(c.r, "vm"))); }}},
      {"student.unbind",
       {true, [](Ctx& c) { return c.change(c.store.unbind_vm(c.by, str(c.r, "vm"))); }}},
      {"student.list",
       {false,
        [](Ctx& c) {
          std::vector<StudentRow> students;
          const Result s = c.store.list_students(c.by, str(c.r, "course", false), false, &students);
          json out = json::array();
          for (const StudentRow& st : students) out.push_back(student_json(st));
          return c.done(s, out);
        }}},
      {"student.show",
       {false,
        [](Ctx& c) {
          const std::string name = str(c.r, "name");
          std::vector<StudentRow> students;
          const Result s = c.store.list_students(c.by, "", false, &students);
          if (!s.ok()) return c.done(s);
          for (const StudentRow& st : students) {
            if (st.name == name) return c.done(s, student_detail(c, st));
          }
          return c.done(Result::not_found("unknown student '" + name + "'"));
        }}},
      {"vm.list",
       {false,
        [](Ctx& c) {
          if (c.by.role != Role::kAdmin) {
            return c.done(Result::permission_denied(
                "permission denied: only admins list every VM (teachers: student list)"));
          }
          std::vector<VmRow> vms;
          const Result s = c.store.list_vms(&vms);
          json out = json::array();
          for (const VmRow& v : vms) {
            out.push_back({{"name", v.name},
                           {"student", v.student},
                           {"first_seen", v.first_seen},
                           {"last_seen", v.last_seen},
                           {"domain_uuid", v.domain_uuid},
                           {"placement",
                            v.placement ? json(placement_name(*v.placement)) : json("inherit")}});
          }
          return c.done(s, out);
        }}},
      // A VM's own placement policy: "spread", "pack", or "inherit" (its
      // student's, course's or the host's again).
      {"vm.set",
       {true,
        [](Ctx& c) {
          const std::string text = str(c.r, "placement");
          std::optional<Placement> placement;
          if (text != "inherit") {
            Placement p;
            if (Result e = parse_placement(text, &p); !e.ok()) {
              return c.done(
                  Result::invalid_argument("placement must be spread, pack or inherit, "
                                           "not '" +
                                           text + "'"));
            }
            placement = p;
          }
          return c.change(c.store.set_vm_placement(c.by, str(c.r, "vm"), placement));
        }}},
      // libvirt domains (docs/libvirt.md). vgpuctl edits the domain; these
      // record it, and the daemon serves (or stops serving) the VM's socket.
      {"vm.attach",
       {true,
        [](Ctx& c) {
          const Result s = c.store.attach_domain(c.by, str(c.r, "vm"), str(c.r, "uuid"),
                                                 str(c.r, "student"), flag(c.r, "dry_run"));
          return flag(c.r, "dry_run") ? c.done(s) : c.change(s);
        }}},
      {"course.domain.allow",
       {true,
        [](Ctx& c) {
          return c.change(c.store.allow_domain(c.by, str(c.r, "course"), str(c.r, "uuid"), true));
        }}},
      {"course.domain.disallow",
       {true,
        [](Ctx& c) {
          return c.change(c.store.allow_domain(c.by, str(c.r, "course"), str(c.r, "uuid"), false));
        }}},
      {"vm.detach",
       {true,
        [](Ctx& c) {
          const Result s = c.store.detach_domain(c.by, str(c.r, "vm"), flag(c.r, "dry_run"));
          return flag(c.r, "dry_run") ? c.done(s) : c.change(s);
        }}},
      {"vm.sessions",
       {false,
        [](Ctx& c) {
          if (c.by.role != Role::kAdmin) {
            return c.done(
                Result::permission_denied("permission denied: only admins read VM sessions"));
          }
          std::vector<VmSession> rows;
          const Result s =
              c.store.list_sessions(str(c.r, "vm", false), integer(c.r, "since"), &rows);
          json out = json::array();
          for (const VmSession& x : rows) {
            out.push_back({{"id", x.id},
                           {"vm", x.vm},
                           {"domain_uuid", x.uuid},
                           {"started_at", x.started_at},
                           {"ended_at", x.ended_at},
                           {"end_reason", x.end_reason},
                           {"gpu_ns", x.gpu_ns}});
          }
          return c.done(s, out);
        }}},
      {"quota.set",
       {true,
        [](Ctx& c) {
          const QuotaTarget t = target_of(c.r);
          QuotaFields f;
          if (Result r = fields_from_request(c.r, &f); !r.ok()) return c.done(r);
          const std::string unassigned = str(c.r, "unassigned", false);
          if (!unassigned.empty()) {
            if (t.kind != QuotaTarget::Kind::kDefault) {
              throw BadRequest{"--unassigned goes with the default quota (quota set --default)"};
            }
            if (unassigned != "run" && unassigned != "refuse") {
              throw BadRequest{"--unassigned must be run or refuse"};
            }
            // The quota first: it is the change that can be refused for its values.
            if (!f.empty()) {
              const Result s = c.store.set_quota(c.by, t, f);
              if (!s.ok()) return c.done(s);
              c.changed = true;
            }
            const Result s = c.store.set_refuse_unassigned(c.by, unassigned == "refuse");
            c.changed = c.changed || s.ok();
            return c.done(s);
          }
          return c.change(c.store.set_quota(c.by, t, f));
        }}},
      {"quota.reset",
       {true, [](Ctx& c) { return c.change(c.store.reset_quota(c.by, target_of(c.r))); }}},
      {"quota.show",
       {false,
        [](Ctx& c) {
          Result s;
          json out = json::array();
          if (c.r.contains("kind")) {
            const QuotaTarget t = target_of(c.r);
            if (t.kind != QuotaTarget::Kind::kStudent) {
              out.push_back(quota_level(c, t, &s));
              return c.done(s, out);
            }
            // A student: what applies to them, and their use this period.
            QuotaFields ignored;
            s = c.store.get_quota(c.by, t, &ignored);
            if (!s.ok()) return c.done(s);
            std::vector<StudentRow> students;
            (void)c.store.list_students(c.by, "", false, &students);  // every course `by` sees
            for (const StudentRow& st : students) {
              if (st.name == t.name) out.push_back(student_detail(c, st));
            }
            return c.done(s, out);
          }
          if (c.by.role == Role::kAdmin) out.push_back(quota_level(c, {}, &s));
          std::vector<CourseRow> courses;
          (void)c.store.list_courses(c.by, &courses);  // never fails
          for (const CourseRow& r : courses) {
            out.push_back(quota_level(c, {QuotaTarget::Kind::kCourse, r.name}, &s));
          }
          std::vector<StudentRow> students;
          (void)c.store.list_students(c.by, "", false, &students);  // every course `by` sees
          for (const StudentRow& st : students) out.push_back(student_detail(c, st));
          return c.done(s, out);
        }}},
      {"usage.report",
       {false,
        [](Ctx& c) {
          ReportFilter f;
          f.course = str(c.r, "course", false);
          f.student = str(c.r, "student", false);
          f.since = integer(c.r, "since");
          f.until = integer(c.r, "until");
          json out;
          // With "by": usage per period and student or course (usage_breakdown.h).
          const Result s = c.r.contains("by")
                               ? usage_breakdown(c.store, c.by, f, breakdown_of(c.r), c.now, &out)
                               : usage_report(c.store, c.by, f, c.now, &out);
          return c.done(s, out);
        }}},
      {"audit.list",
       {false,
        [](Ctx& c) {
          std::vector<AuditRow> rows;
          const Result s = c.store.audit_log(c.by, integer(c.r, "since"), &rows);
          json out = json::array();
          for (const AuditRow& a : rows) {
            out.push_back({{"at", a.at},
                           {"uid", a.uid},
                           {"actor", a.actor},
                           {"action", a.action},
                           {"object", a.object},
                           {"old", a.old_value},
                           {"new", a.new_value}});
          }
          return c.done(s, out);
        }}},
  };
  return *ops;
}

}  // namespace

bool is_change(std::string_view op) {
  auto it = table().find(op);
  return it == table().end() || it->second.first;
}

OpResult execute(Store& store, const Actor& by, const json& request, int64_t now,
                 LiveState* live) {
  OpResult out;
  try {
    const std::string op = op_of(request);
    if (op.empty()) {
      out.answer = error_answer("a request is a JSON object with an \"op\"");
      return out;
    }
    auto it = table().find(op);
    if (it == table().end()) {
      out.answer = error_answer("unknown operation '" + op + "'");
      return out;
    }
    Ctx c{store, by, request, now, live};
    out.answer = it->second.second(c);
    out.changed = c.changed;
  } catch (const BadRequest& e) {
    out.answer = error_answer(e.why);
  } catch (const std::exception& e) {
    out.answer = error_answer(std::string("bad request: ") + e.what());
  }
  return out;
}

}  // namespace vgpu::admin
