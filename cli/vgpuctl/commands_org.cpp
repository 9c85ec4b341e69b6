// vgpuctl whoami | user ... | course ... | student ... (vm ...: commands_vm.cpp)
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "context.h"
#include "table.h"
#include "vgpu/policy/time_zone.h"
#include "vgpu/policy/units.h"

namespace vgpu::ctl {
namespace {

void print_done(const std::string& what) { std::printf("%s\n", what.c_str()); }

std::string period_cell(const json& s) {
  const json& p = s["period"];
  std::string used = p.value("used", "0s");
  if (s["quota"].value("limited", false)) {
    return used + " of " + s["quota"].value("gpu_time", "") + " (" + p.value("left", "0s") +
           " left)";
  }
  return used + " (unlimited)";
}

void print_student(const json& s) {
  std::printf("student:   %s\n", s.value("name", "").c_str());
  std::printf("course:    %s\n", s.value("course", "").c_str());
  std::printf("VMs:       %s\n",
              s["vms"].empty() ? "(none bound)"
                               : join(s["vms"].get<std::vector<std::string>>(), ", ").c_str());
  std::printf("login:     %s\n", s.contains("uid") && s["uid"].is_number()
                                      ? ("uid " + std::to_string(s["uid"].get<int64_t>())).c_str()
                                      : "(none: only admins run as their VMs here)");
  std::printf("added:     %s\n", when(s.value("created_at", int64_t{0})).c_str());
  const json& q = s["quota"];
  std::printf("gpu time:  %s, on exhaust: %s\n", q.value("gpu_time", "").c_str(),
              q.value("on_exhaust", "").c_str());
  std::printf("memory:    %s\n", q.value("memory", "").c_str());
  std::printf("weight:    %d\n", q.value("weight", 1));
  std::printf("set here:  %s\n", s["quota_set"].empty() ? "(nothing; inherits the course's)"
                                                        : set_text(s["quota_set"]).c_str());
  std::printf("this period (%s .. %s): %s\n", when(s["period"].value("start", int64_t{0})).c_str(),
              when(s["period"].value("end", int64_t{0})).c_str(), period_cell(s).c_str());
}

void add_user_commands(CLI::App& app, Context& ctx) {
  auto* user =
      app.add_subcommand("user", "admins and teachers allowed on the admin socket (admins only)");
  user->require_subcommand(1);

  auto* add = user->add_subcommand("add", "let a Unix user in as a teacher (or admin)");
  static std::string name, role = "teacher";
  static uint32_t uid = 0;
  add->add_option("NAME", name, "user name")->required()->check(name_validator("user"));
  add->add_option("--uid", uid, "their Unix uid (the admin socket sees it)")->required();
  add->add_option("--role", role, "teacher (their own courses) or admin (everything)")
      ->check(CLI::IsMember({"teacher", "admin"}));
  add->callback([&ctx] {
    ctx.action = [&ctx] {
      return ctx.run({{"op", "user.add"}, {"name", name}, {"uid", uid}, {"role", role}},
                     [](const json&) { print_done("added user " + name + " (" + role + ")"); });
    };
  });

  auto* remove =
      user->add_subcommand("remove", "remove a user (their courses stay, run by admins)");
  remove->add_option("NAME", name, "user name")->required();
  remove->callback([&ctx] {
    ctx.action = [&ctx] {
      return ctx.run({{"op", "user.remove"}, {"name", name}},
                     [](const json&) { print_done("removed user " + name); });
    };
  });

  auto* list = user->add_subcommand("list", "list users");
  add_output_options(list, ctx);
  list->callback([&ctx] {
    ctx.action = [&ctx] {
      return ctx.run({{"op", "user.list"}}, [&ctx](const json& r) {
        Table t({text_column("USER", "user"), number_column("UID", "uid"),
                 text_column("ROLE", "role"), text_column("ADDED", "added_at")});
        for (const json& u : r) {
          t.add({u["name"], u["uid"], u["role"], time_cell(u["created_at"].get<int64_t>())});
        }
        ctx.print(t);
      });
    };
  });
}

// An IANA time zone the system's tz database knows, refused (exit 2) before anything is sent.
CLI::Validator time_zone_validator() {
  return CLI::Validator(
      [](std::string& s) {
        policy::TimeZone z;
        return policy::TimeZone::find(s, &z).message();  // empty: valid
      },
      "ZONE");
}

void add_course_commands(CLI::App& app, Context& ctx) {
  auto* course = app.add_subcommand("course", "create, list, show, change and delete courses");
  course->require_subcommand(1);
  static std::string name, teacher, tz;
  static bool force = false;

  auto* create = course->add_subcommand("create", "create a course (a teacher creates their own)");
  create->add_option("NAME", name, "course name")->required()->check(name_validator("course"));
  create->add_option("--teacher", teacher,
                     "the teacher who runs it (admins only; default: you, if a teacher)");
  create
      ->add_option("--tz", tz,
                   "its time zone, an IANA name (Europe/Berlin): quota periods renew at its "
                   "midnights, reports count its days (default UTC)")
      ->check(time_zone_validator());
  create->callback([&ctx] {
    ctx.action = [&ctx] {
      json req = {{"op", "course.create"}, {"name", name}};
      if (!teacher.empty()) req["teacher"] = teacher;
      if (!tz.empty()) req["time_zone"] = tz;
      return ctx.run(req, [](const json&) {
        print_done("created course " + name + (tz.empty() ? "" : " (time zone " + tz + ")"));
      });
    };
  });

  auto* change = course->add_subcommand("set", "change a course (audited)");
  change->add_option("NAME", name, "course name")->required();
  change->add_option("--tz", tz,
               "its time zone, an IANA name (Europe/Berlin, UTC): its students' quota periods "
               "renew at its midnights from now on")
      ->required()
      ->check(time_zone_validator());
  change->callback([&ctx] {
    ctx.action = [&ctx] {
      return ctx.run({{"op", "course.set"}, {"name", name}, {"time_zone", tz}}, [](const json&) {
        print_done("course " + name + ": time zone " + tz);
      });
    };
  });

  auto* list = course->add_subcommand("list", "list the courses you see");
  add_output_options(list, ctx);
  list->callback([&ctx] {
    ctx.action = [&ctx] {
      return ctx.run({{"op", "course.list"}}, [&ctx](const json& r) {
        Table t({text_column("COURSE", "course"), text_column("TEACHER", "teacher"),
                 number_column("STUDENTS", "students"), text_column("CREATED", "created_at")});
        for (const json& c : r) {
          t.add({c["name"], optional_cell(c["teacher"]), c["students"],
                 time_cell(c["created_at"].get<int64_t>())});
        }
        ctx.print(t);
      });
    };
  });

  auto* show = course->add_subcommand("show", "a course, its quota and its students");
  show->add_option("NAME", name, "course name")->required();
  add_output_options(show, ctx);  // -o csv|json: the students' table alone
  show->callback([&ctx] {
    ctx.action = [&ctx] {
      return ctx.run({{"op", "course.show"}, {"name", name}}, [&ctx](const json& r) {
        Table t({text_column("STUDENT", "student"), text_column("VMS", "vms"),
                 text_column("GPU TIME", "gpu_time"), text_column("MEMORY", "memory"),
                 text_column("ON EXHAUST", "on_exhaust"), table_only("THIS PERIOD"),
                 machine_only("period_used_ns"), machine_only("period_left_ns")});
        for (const json& s : r["students"]) {
          const json& p = s["period"];
          t.add({s["name"], names_cell(s["vms"].get<std::vector<std::string>>()),
                 s["quota"]["gpu_time"], s["quota"]["memory"], s["quota"]["on_exhaust"],
                 period_cell(s), p.value("used_ns", json()), p.value("left_ns", json())});
        }
        if (!ctx.for_people()) {
          ctx.print(t);
          return;
        }
        std::printf("course:   %s\n", r.value("name", "").c_str());
        std::printf("teacher:  %s\n",
                    r.value("teacher", "").empty() ? "-" : r.value("teacher", "").c_str());
        std::printf("created:  %s\n", when(r.value("created_at", int64_t{0})).c_str());
        std::printf("time zone: %s (quota periods and reports)\n",
                    r.value("time_zone", "UTC").c_str());
        const json& set = r["quota"]["set"];
        std::printf("quota for each student: %s\n",
                    set.empty() ? "(nothing set)" : set_text(set).c_str());
        std::printf("course weight: %d\n", r["quota"].value("course_weight", 1));
        std::printf("domains its teachers may attach: %s\n\n",
                    r.value("domains", json::array()).empty()
                        ? "(none; an admin allows them with vgpuctl vm allow)"
                        : join(r["domains"].get<std::vector<std::string>>()).c_str());
        ctx.print(t);
      });
    };
  });

  auto* del = course->add_subcommand("delete", "delete a course (its history stays in the ledger)");
  del->add_option("NAME", name, "course name")->required();
  del->add_flag("--force", force, "also remove its students");
  del->callback([&ctx] {
    ctx.action = [&ctx] {
      return ctx.run({{"op", "course.delete"}, {"name", name}, {"force", force}},
                     [](const json&) { print_done("deleted course " + name); });
    };
  });
}

void add_student_commands(CLI::App& app, Context& ctx) {
  auto* student = app.add_subcommand("student", "add, list, show and remove students; bind VMs");
  student->require_subcommand(1);
  static std::string name, course, vm, uid_text;
  static std::vector<std::string> vms;
  static std::optional<uint32_t> uid;

  auto* add = student->add_subcommand("add", "add a student to a course, optionally binding VMs");
  add->add_option("NAME", name, "student name")->required()->check(name_validator("student"));
  add->add_option("--course", course, "their course")->required();
  add->add_option("--vm", vms,
                  "a VM (hypervisor domain, or vgpu-run --vm NAME) to bind; repeatable")
      ->check(name_validator("VM"));
  add->add_option("--uid", uid,
                  "their Unix uid here: their processes may run as their VMs (vgpu-run --vm)");
  add->callback([&ctx] {
    ctx.action = [&ctx] {
      json req = {{"op", "student.add"}, {"name", name}, {"course", course}, {"vms", vms}};
      if (uid) req["uid"] = *uid;
      return ctx.run(req,
                     [](const json&) {
                       print_done("added student " + name + " to " + course +
                                  (vms.empty() ? "" : " (VM " + join(vms, ", ") + ")"));
                     });
    };
  });

  auto* bind = student->add_subcommand("bind", "bind a VM to a student");
  bind->add_option("NAME", name, "student name")->required();
  bind->add_option("--vm", vm, "the VM")->required()->check(name_validator("VM"));
  bind->callback([&ctx] {
    ctx.action = [&ctx] {
      return ctx.run({{"op", "student.bind"}, {"name", name}, {"vm", vm}},
                     [](const json&) { print_done("bound VM " + vm + " to " + name); });
    };
  });

  auto* login = student->add_subcommand(
      "uid", "set the Unix uid whose processes may run as the student's VMs (none: nobody's)");
  login->add_option("NAME", name, "student name")->required();
  login->add_option("UID", uid_text, "a uid, or none")->required();
  login->callback([&ctx] {
    ctx.action = [&ctx]() -> int {
      json req = {{"op", "student.uid"}, {"name", name}, {"uid", nullptr}};
      if (uid_text != "none") {
        char* end = nullptr;
        errno = 0;
        const unsigned long long v = std::strtoull(uid_text.c_str(), &end, 10);
        if (uid_text.empty() || !std::isdigit(static_cast<unsigned char>(uid_text[0])) || *end ||
            errno || v >= UINT32_MAX) {
          std::fprintf(stderr, "vgpuctl: UID must be a number or none, not '%s'\n", uid_text.c_str());
          return 2;
        }
        req["uid"] = v;
      }
      return ctx.run(req, [](const json&) {
        print_done(uid_text == "none" ? "student " + name + " has no login here"
                                      : "student " + name + " is uid " + uid_text + " here");
      });
    };
  });

  auto* unbind = student->add_subcommand("unbind", "unbind a VM (it runs under the default quota)");
  unbind->add_option("--vm", vm, "the VM")->required();
  unbind->callback([&ctx] {
    ctx.action = [&ctx] {
      return ctx.run({{"op", "student.unbind"}, {"vm", vm}},
                     [](const json&) { print_done("unbound VM " + vm); });
    };
  });

  auto* list = student->add_subcommand("list", "list students");
  list->add_option("--course", course, "only this course");
  add_output_options(list, ctx);
  list->callback([&ctx] {
    ctx.action = [&ctx] {
      json req = {{"op", "student.list"}};
      if (!course.empty()) req["course"] = course;
      return ctx.run(req, [&ctx](const json& r) {
        Table t({text_column("STUDENT", "student"), text_column("COURSE", "course"),
                 text_column("VMS", "vms"), number_column("UID", "uid"),
                 text_column("ADDED", "added_at")});
        for (const json& s : r) {
          const json their_uid = s.value("uid", json());
          t.add({s["name"], s["course"], names_cell(s["vms"].get<std::vector<std::string>>()),
                 their_uid.is_number() ? Cell(their_uid) : Cell("-", nullptr),
                 time_cell(s["created_at"].get<int64_t>())});
        }
        ctx.print(t);
      });
    };
  });

  add_import_command(student, ctx);

  auto* show = student->add_subcommand("show", "a student: VMs, quota, and usage this period");
  show->add_option("NAME", name, "student name")->required();
  show->callback([&ctx] {
    ctx.action = [&ctx] {
      return ctx.run({{"op", "student.show"}, {"name", name}}, print_student);
    };
  });

  auto* remove =
      student->add_subcommand("remove", "remove a student (their VMs become unassigned)");
  remove->add_option("NAME", name, "student name")->required();
  remove->callback([&ctx] {
    ctx.action = [&ctx] {
      return ctx.run({{"op", "student.remove"}, {"name", name}},
                     [](const json&) { print_done("removed student " + name); });
    };
  });
}

}  // namespace

void add_org_commands(CLI::App& app, Context& ctx) {
  auto* whoami = app.add_subcommand("whoami", "who the daemon takes you for, and your role");
  whoami->callback([&ctx] {
    ctx.action = [&ctx] {
      return ctx.run({{"op", "whoami"}}, [](const json& r) {
        std::printf("%s (uid %u): %s\n", r.value("name", "").c_str(), r.value("uid", 0u),
                    r.value("role", "").c_str());
      });
    };
  });
  add_user_commands(app, ctx);
  add_course_commands(app, ctx);
  add_student_commands(app, ctx);
}

}  // namespace vgpu::ctl
