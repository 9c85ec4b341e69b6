// vgpuctl quota set | show | reset
#include <cstdio>

#include "context.h"
#include "table.h"

namespace vgpu::ctl {
namespace {

struct Target {
  std::string student, course;
  bool defaults = false;
};

void add_target(CLI::App* cmd, Target& t) {
  auto* s = cmd->add_option("STUDENT", t.student, "a student");
  auto* c = cmd->add_option("--course", t.course, "a course: the quota each of its students gets");
  auto* d = cmd->add_flag("--default", t.defaults,
                          "the default quota of VMs bound to no student (admins)");
  s->excludes(c)->excludes(d);
  c->excludes(d);
}

int no_target(const char* command) {
  std::fprintf(stderr, "vgpuctl: quota %s needs a STUDENT, --course C or --default\n", command);
  return 2;
}

// Adds the target to a request; false if none was given.
bool put_target(const Target& t, json* req) {
  if (t.defaults)
    (*req)["kind"] = "default";
  else if (!t.course.empty())
    (*req)["kind"] = "course", (*req)["name"] = t.course;
  else if (!t.student.empty())
    (*req)["kind"] = "student", (*req)["name"] = t.student;
  else
    return false;
  return true;
}

std::string target_name(const Target& t) {
  if (t.defaults) return "the default quota";
  if (!t.course.empty()) return "course " + t.course;
  return "student " + t.student;
}

Table levels_table(const json& levels) {
  Table t({text_column("LEVEL", "level"), text_column("NAME", "name"),
           text_column("GPU TIME", "gpu_time"), text_column("MEMORY", "memory"),
           number_column("WEIGHT", "weight"), text_column("ON EXHAUST", "on_exhaust"),
           text_column("SET HERE", "set_here"), table_only("THIS PERIOD"),
           machine_only("period_used_ns"), machine_only("period_left_ns")});
  for (const json& l : levels) {
    if (l.contains("quota")) {  // a student: the quota that applies to them
      const json& q = l["quota"];
      const json& p = l["period"];
      std::string period = p.value("used", "0s");
      if (q.value("limited", false)) period += " used, " + p.value("left", "0s") + " left";
      t.add({"student", l["name"], q["gpu_time"], q["memory"], q.value("weight", 1),
             q["on_exhaust"], optional_cell(set_text(l["quota_set"])), period,
             p.value("used_ns", json()), p.value("left_ns", json())});
    } else if (l.value("kind", "") == "course") {
      const json& s = l["set"];
      const int weight = l.value("course_weight", 1);
      t.add({"course", l["name"], optional_cell(s.value("gpu_time", "")),
             optional_cell(s.value("memory", "")),
             Cell(std::to_string(weight) + " (course)", weight),
             optional_cell(s.value("on_exhaust", "")), optional_cell(set_text(s)), ""});
    } else {
      const json& q = l["effective"];
      t.add({"default",
             Cell("(unassigned VMs: " + l.value("unassigned", "run") + ")", "(unassigned)"),
             q["gpu_time"], q["memory"], q.value("weight", 1), q["on_exhaust"],
             optional_cell(set_text(l["set"])), ""});
    }
  }
  return t;
}

}  // namespace

void add_quota_commands(CLI::App& app, Context& ctx) {
  auto* quota = app.add_subcommand("quota", "GPU-time budgets, memory caps and weights");
  quota->require_subcommand(1);

  static Target target;
  static std::string gpu_time, memory, on_exhaust, unassigned, placement;
  static int64_t weight = 0;
  auto* set = quota->add_subcommand(
      "set",
      "set a student's, a course's (each of its students) or the default quota; fields not given "
      "keep their value");
  add_target(set, target);
  set->add_option("--gpu-time", gpu_time,
                  "GPU time per period: 2h/week, 90m/day, 20h/month, 10h/2025-01-06..2025-03-31, unlimited")
      ->check(gpu_time_validator());
  set->add_option("--memory", memory, "device-memory cap per VM: 4GiB, 512MiB, none")
      ->check(bytes_validator());
  set->add_option("--weight", weight,
                  "share: a student's within the course; a course's among courses (admins)")
      ->check(CLI::Range(int64_t{1}, int64_t{10000}));
  set->add_option("--on-exhaust", on_exhaust,
                  "when the budget is spent: reject (a clear CUDA error), wait (until renewal or "
                  "a raise), best-effort (runs behind everyone in budget)")
      ->check(CLI::IsMember({"reject", "wait", "best-effort"}));
  set->add_option("--placement", placement,
                  "which of the host's GPUs the VMs go to: spread (the least loaded) or pack "
                  "(fill one GPU first); not set: the host's (vgpud --placement)")
      ->check(CLI::IsMember({"spread", "pack"}));
  set->add_option("--unassigned", unassigned,
                  "with --default: run unassigned VMs under the default quota, or refuse them")
      ->check(CLI::IsMember({"run", "refuse"}));
  set->callback([&ctx, set] {
    ctx.action = [&ctx, set] {
      json req = {{"op", "quota.set"}};
      if (!put_target(target, &req)) return no_target("set");
      if (set->count("--gpu-time")) req["gpu_time"] = gpu_time;
      if (set->count("--memory")) req["memory"] = memory;
      if (set->count("--weight")) req["weight"] = weight;
      if (set->count("--on-exhaust")) req["on_exhaust"] = on_exhaust;
      if (set->count("--placement")) req["placement"] = placement;
      if (set->count("--unassigned")) req["unassigned"] = unassigned;
      return ctx.run(req,
                     [](const json&) { std::printf("set %s\n", target_name(target).c_str()); });
    };
  });

  auto* show = quota->add_subcommand("show", "quotas you see (or one level), with use this period");
  add_target(show, target);
  add_output_options(show, ctx);
  show->callback([&ctx] {
    ctx.action = [&ctx] {
      json req = {{"op", "quota.show"}};
      put_target(target, &req);
      return ctx.run(req, [&ctx](const json& levels) { ctx.print(levels_table(levels)); });
    };
  });

  auto* reset = quota->add_subcommand("reset", "clear what one level sets (it inherits again)");
  add_target(reset, target);
  reset->callback([&ctx] {
    ctx.action = [&ctx] {
      json req = {{"op", "quota.reset"}};
      if (!put_target(target, &req)) return no_target("reset");
      return ctx.run(req,
                     [](const json&) { std::printf("reset %s\n", target_name(target).c_str()); });
    };
  });
}

}  // namespace vgpu::ctl
