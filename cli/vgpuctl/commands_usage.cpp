// vgpuctl usage report | audit
#include <cstdio>
#include <fstream>

#include "breakdown_table.h"
#include "context.h"
#include "html_report.h"
#include "table.h"
#include "vgpu/policy/units.h"

namespace vgpu::ctl {
namespace {

using policy::format_bytes;
using policy::format_duration;

std::string who(const json& row) {
  if (!row.value("assigned", true)) return "(unassigned)";
  return row.value("student", "") + (row.value("removed", false) ? " (removed)" : "");
}

std::string quota_cell(const json& row) {
  if (!row.contains("quota")) return "-";
  return row["quota"].value("gpu_time", "-");
}

// A period field for people ("1h30m"), with the nanoseconds for programs.
Cell period_cell(const json& row, const char* key) {
  const json& p = row.value("period", json::object());
  if (!p.contains(key)) return {"-", nullptr};
  return {p.value(std::string(key), "-"), p.value(std::string(key) + "_ns", json())};
}

Cell amount(const json& v, std::string (*format)(uint64_t)) {
  return {format(v.get<uint64_t>()), v};
}

std::string duration(uint64_t ns) { return format_duration(static_cast<int64_t>(ns)); }

// The CSV keys are the ones `usage report --format csv` has always written.
Table report_table(const json& r) {
  Table t({text_column("STUDENT", "student"), text_column("COURSE", "course"),
           text_column("VMS", "vms"), number_column("GPU TIME", "gpu_ns"),
           number_column("KERNELS", "kernels"), number_column("TO DEVICE", "bytes_to_device"),
           number_column("FROM DEVICE", "bytes_from_device"),
           number_column("PEAK MEMORY", "peak_memory"), text_column("QUOTA", "quota"),
           number_column("USED THIS PERIOD", "period_used_ns"),
           number_column("LEFT", "period_left_ns")});
  for (const json& row : r["rows"]) {
    t.add({who(row), optional_cell(row["course"]),
           names_cell(row["vms"].get<std::vector<std::string>>()), amount(row["gpu_ns"], duration),
           row["kernels"], amount(row["bytes_to_device"], format_bytes),
           amount(row["bytes_from_device"], format_bytes), amount(row["peak_memory"], format_bytes),
           quota_cell(row), period_cell(row, "used"), period_cell(row, "left")});
  }
  return t;
}

Table audit_table(const json& rows) {
  Table t({text_column("TIME (UTC)", "at"), text_column("WHO", "actor"),
           number_column("UID", "uid"), text_column("ACTION", "action"),
           text_column("OBJECT", "object"), text_column("OLD", "old"), text_column("NEW", "new")});
  for (const json& a : rows) {
    t.add({time_cell(a["at"].get<int64_t>()), a["actor"], a["uid"], a["action"], a["object"],
           optional_cell(a["old"]), optional_cell(a["new"])});
  }
  return t;
}

// --format, the older spelling of -o on these two commands: csv and table as
// -o has them; json is the daemon's answer, as --json gives it.
bool raw_answer(const Context& ctx, const std::string& format) {
  return ctx.json_output || format == "json";
}
void apply_format(Context& ctx, const std::string& format) {
  if (format == "csv") ctx.format = Format::kCsv;
}

// --by: at most one period (day, week, month) and one grouping (student,
// course); false with `why` otherwise. Without a grouping: per student.
bool breakdown_request(const std::vector<std::string>& by, json* out, std::string* why) {
  std::string period, group;
  for (const std::string& b : by) {
    std::string& slot = b == "student" || b == "course" ? group : period;
    if (!slot.empty() && slot != b) {
      *why = "--by takes one of day, week, month and one of student, course (not " + slot +
             " and " + b + ")";
      return false;
    }
    slot = b;
  }
  *out = json::array();
  if (!period.empty()) out->push_back(period);
  out->push_back(group.empty() ? "student" : group);
  return true;
}

void print_breakdown(Context& ctx, const json& result, const std::string& unit_text) {
  TimeUnit unit = TimeUnit::kDuration;
  parse_time_unit(unit_text, &unit);
  if (ctx.for_people()) {
    const int64_t from = result["since"].get<int64_t>();
    std::printf("Usage by %s %s %s (periods in each course's time zone)\n",
                join(result["by"].get<std::vector<std::string>>(), " and ").c_str(),
                from ? ("from " + when(from)).c_str() : "recorded",
                ("until " + when(result["until"].get<int64_t>())).c_str());
  }
  ctx.print(breakdown_table(result, unit));
}

}  // namespace

void add_usage_commands(CLI::App& app, Context& ctx) {
  auto* usage = app.add_subcommand("usage", "the usage ledger");
  usage->require_subcommand(1);
  auto* report = usage->add_subcommand(
      "report", "GPU time, kernels, bytes and peak memory per student, against their quota");
  static std::string course, student, since, until, format = "table", html, time_unit;
  static std::vector<std::string> by;
  report->add_option("--course", course, "only this course");
  report->add_option("--student", student, "only this student");
  report->add_option("--since", since, "from this DATE (YYYY-MM-DD[THH:MM], UTC; default: all)")
      ->check(CLI::Validator(
          [](std::string& s) {
            int64_t t = 0;
            return policy::parse_date(s, false, 0, &t).message();  // empty: valid
          },
          "DATE"));
  report->add_option("--until", until, "through this DATE (a bare date includes the whole day)")
      ->check(CLI::Validator(
          [](std::string& s) {
            int64_t t = 0;
            return policy::parse_date(s, true, 0, &t).message();  // empty: valid
          },
          "DATE"));
  add_output_options(report, ctx);
  report
      ->add_option("--format", format,
                   "the older spelling of -o (json: the daemon's answer, as --json)")
      ->check(CLI::IsMember({"table", "csv", "json"}))
      ->excludes("-o");
  auto* html_option = report->add_option(
      "--html", html, "also write a self-contained HTML report with charts to FILE");
  report
      ->add_option("--by", by,
                   "a row per day, week or month (in each course's time zone) and per student or "
                   "course, as sreport: --by week --by course, or --by week,course")
      ->delimiter(',')
      ->check(CLI::IsMember({"day", "week", "month", "student", "course"}))
      ->excludes(html_option);
  report
      ->add_option("--time", time_unit,
                   "GPU time in hours, or in percent of the student's quota for the period "
                   "(implies --by student)")
      ->check(CLI::IsMember({"hours", "percent"}))
      ->excludes(html_option);
  report->callback([&ctx] {
    ctx.action = [&ctx] {
      json req = {{"op", "usage.report"}};
      if (!course.empty()) req["course"] = course;
      if (!student.empty()) req["student"] = student;
      if (!since.empty()) req["since"] = parse_date_or_die(since, false);
      if (!until.empty()) req["until"] = parse_date_or_die(until, true);
      const bool breakdown = !by.empty() || !time_unit.empty();
      if (breakdown) {
        std::string why;
        json groups;
        if (!breakdown_request(by, &groups, &why)) {
          std::fprintf(stderr, "vgpuctl: %s (see --help)\n", why.c_str());
          return 2;
        }
        req["by"] = groups;
      }
      json result;
      if (!ctx.call(req, &result)) return 1;
      if (breakdown) {
        if (raw_answer(ctx, format)) {
          std::printf("%s\n", result.dump(2).c_str());
        } else {
          apply_format(ctx, format);
          print_breakdown(ctx, result, time_unit);
        }
        return 0;
      }
      if (!html.empty()) {
        std::ofstream out(html, std::ios::trunc);
        out << html_report(result);
        out.close();
        if (!out) {
          std::fprintf(stderr, "vgpuctl: cannot write %s\n", html.c_str());
          return 1;
        }
      }
      if (raw_answer(ctx, format)) {
        std::printf("%s\n", result.dump(2).c_str());
      } else {
        apply_format(ctx, format);
        if (ctx.for_people()) {
          const int64_t from = result["since"].get<int64_t>();
          std::printf("Usage %s %s (UTC)\n", from ? ("from " + when(from)).c_str() : "recorded",
                      ("until " + when(result["until"].get<int64_t>())).c_str());
        }
        ctx.print(report_table(result));
      }
      if (!html.empty()) std::fprintf(stderr, "vgpuctl: wrote %s\n", html.c_str());
      return 0;
    };
  });

  auto* flush = usage->add_subcommand(
      "flush", "have vgpud write the usage it has measured to the database now (it does every second)");
  flush->callback([&ctx] {
    ctx.action = [&ctx] {
      if (!ctx.db.empty()) {
        std::fprintf(stderr, "vgpuctl: usage flush asks vgpud; with --db there is no daemon to ask\n");
        return 1;
      }
      return ctx.run({{"op", "usage.flush"}}, [](const json&) { std::printf("usage written\n"); });
    };
  });

  auto* audit = app.add_subcommand("audit", "every change: who, when, old -> new");
  static std::string audit_since, audit_format = "table";
  audit->add_option("--since", audit_since, "from this DATE (UTC)")
      ->check(CLI::Validator(
          [](std::string& s) {
            int64_t t = 0;
            return policy::parse_date(s, false, 0, &t).message();  // empty: valid
          },
          "DATE"));
  add_output_options(audit, ctx);
  audit
      ->add_option("--format", audit_format,
                   "the older spelling of -o (json: the daemon's answer, as --json)")
      ->check(CLI::IsMember({"table", "csv", "json"}))
      ->excludes("-o");
  audit->callback([&ctx] {
    ctx.action = [&ctx] {
      json req = {{"op", "audit.list"}};
      if (!audit_since.empty()) req["since"] = parse_date_or_die(audit_since, false);
      json result;
      if (!ctx.call(req, &result)) return 1;
      if (raw_answer(ctx, audit_format)) {
        std::printf("%s\n", result.dump(2).c_str());
      } else {
        apply_format(ctx, audit_format);
        ctx.print(audit_table(result));
      }
      return 0;
    };
  });
}

}  // namespace vgpu::ctl
