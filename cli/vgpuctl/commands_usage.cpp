// vgpuctl usage report | audit
#include <cstdio>
#include <fstream>

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

std::string period_cell(const json& row, const char* key) {
  if (!row.contains("period") || !row["period"].contains(key)) return "-";
  return row["period"].value(std::string(key), "-");
}

void print_report(const json& r, const std::string& format) {
  if (format == "json") {
    std::printf("%s\n", r.dump(2).c_str());
    return;
  }
  const bool csv = format == "csv";
  Table t(csv ? std::vector<std::string>{"student", "course", "vms", "gpu_ns", "kernels",
                                         "bytes_to_device", "bytes_from_device", "peak_memory",
                                         "quota", "period_used_ns", "period_left_ns"}
              : std::vector<std::string>{"STUDENT", "COURSE", "VMS", "GPU TIME", "KERNELS",
                                         "TO DEVICE", "FROM DEVICE", "PEAK MEMORY", "QUOTA",
                                         "USED THIS PERIOD", "LEFT"});
  for (const json& row : r["rows"]) {
    const std::string vms = join(row["vms"].get<std::vector<std::string>>(), csv ? " " : ",");
    if (csv) {
      const json& p = row.value("period", json::object());
      t.add({who(row), row["course"], vms, std::to_string(row["gpu_ns"].get<uint64_t>()),
             std::to_string(row["kernels"].get<uint64_t>()),
             std::to_string(row["bytes_to_device"].get<uint64_t>()),
             std::to_string(row["bytes_from_device"].get<uint64_t>()),
             std::to_string(row["peak_memory"].get<uint64_t>()), quota_cell(row),
             p.contains("used_ns") ? std::to_string(p["used_ns"].get<int64_t>()) : "",
             p.contains("left_ns") ? std::to_string(p["left_ns"].get<int64_t>()) : ""});
    } else {
      t.add({who(row),
             row["course"].get<std::string>().empty() ? "-" : row["course"].get<std::string>(), vms,
             format_duration(row["gpu_ns"].get<int64_t>()),
             std::to_string(row["kernels"].get<uint64_t>()),
             format_bytes(row["bytes_to_device"].get<uint64_t>()),
             format_bytes(row["bytes_from_device"].get<uint64_t>()),
             format_bytes(row["peak_memory"].get<uint64_t>()), quota_cell(row),
             period_cell(row, "used"), period_cell(row, "left")});
    }
  }
  if (csv) {
    t.print_csv();
    return;
  }
  const int64_t since = r["since"].get<int64_t>();
  std::printf("Usage %s %s (UTC)\n", since ? ("from " + when(since)).c_str() : "recorded",
              ("until " + when(r["until"].get<int64_t>())).c_str());
  t.print();
}

void print_audit(const json& rows, const std::string& format) {
  if (format == "json") {
    std::printf("%s\n", rows.dump(2).c_str());
    return;
  }
  Table t({"TIME (UTC)", "WHO", "UID", "ACTION", "OBJECT", "OLD", "NEW"});
  for (const json& a : rows) {
    const std::string old_value = a["old"], new_value = a["new"];
    t.add({when(a["at"].get<int64_t>()), a["actor"], std::to_string(a["uid"].get<uint32_t>()),
           a["action"], a["object"], old_value.empty() ? "-" : old_value,
           new_value.empty() ? "-" : new_value});
  }
  if (format == "csv")
    t.print_csv();
  else
    t.print();
}

}  // namespace

void add_usage_commands(CLI::App& app, Context& ctx) {
  auto* usage = app.add_subcommand("usage", "the usage ledger");
  usage->require_subcommand(1);
  auto* report = usage->add_subcommand(
      "report", "GPU time, kernels, bytes and peak memory per student, against their quota");
  static std::string course, student, since, until, format = "table", html;
  report->add_option("--course", course, "only this course");
  report->add_option("--student", student, "only this student");
  report->add_option("--since", since, "from this DATE (YYYY-MM-DD[THH:MM], UTC; default: all)")
      ->check(CLI::Validator(
          [](std::string& s) {
            int64_t t = 0;
            std::string why;
            return policy::parse_date(s, false, 0, &t, &why) ? std::string() : why;
          },
          "DATE"));
  report->add_option("--until", until, "through this DATE (a bare date includes the whole day)")
      ->check(CLI::Validator(
          [](std::string& s) {
            int64_t t = 0;
            std::string why;
            return policy::parse_date(s, true, 0, &t, &why) ? std::string() : why;
          },
          "DATE"));
  report->add_option("--format", format, "table, csv or json")
      ->check(CLI::IsMember({"table", "csv", "json"}));
  report->add_option("--html", html, "also write a self-contained HTML report with charts to FILE");
  report->callback([&ctx] {
    ctx.action = [&ctx] {
      json req = {{"op", "usage.report"}};
      if (!course.empty()) req["course"] = course;
      if (!student.empty()) req["student"] = student;
      if (!since.empty()) req["since"] = parse_date_or_die(since, false);
      if (!until.empty()) req["until"] = parse_date_or_die(until, true);
      json result;
      if (!ctx.call(req, &result)) return 1;
      if (!html.empty()) {
        std::ofstream out(html, std::ios::trunc);
        out << html_report(result);
        out.close();
        if (!out) {
          std::fprintf(stderr, "vgpuctl: cannot write %s\n", html.c_str());
          return 1;
        }
      }
      print_report(result, ctx.json_output ? "json" : format);
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
            std::string why;
            return policy::parse_date(s, false, 0, &t, &why) ? std::string() : why;
          },
          "DATE"));
  audit->add_option("--format", audit_format, "table, csv or json")
      ->check(CLI::IsMember({"table", "csv", "json"}));
  audit->callback([&ctx] {
    ctx.action = [&ctx] {
      json req = {{"op", "audit.list"}};
      if (!audit_since.empty()) req["since"] = parse_date_or_die(audit_since, false);
      json result;
      if (!ctx.call(req, &result)) return 1;
      print_audit(result, ctx.json_output ? "json" : audit_format);
      return 0;
    };
  });
}

}  // namespace vgpu::ctl
