// vgpuctl student import ROSTER.csv --course C [--partial] [--dry-run]: a
// class in one command. vgpuctl reads the file and checks its shape (the
// columns, each row's number of fields); the daemon checks and adds the rows
// in one transaction (admin op student.import), as `student add`, `student
// uid` and `quota set` would one by one. Without --partial one bad row means
// nothing is added.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "admin_protocol.h"
#include "context.h"
#include "csv.h"

namespace vgpu::ctl {
namespace {

const char* const kColumns[] = {"name", "vm", "uid", "gpu_time", "memory"};
const char* const kKnownColumns = "name, vm, uid, gpu_time, memory";

std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// "GPU-Time " -> "gpu_time": headers are matched loosely, values are not.
std::string column_key(const std::string& header) {
  std::string k = trimmed(header);
  for (char& c : k)
    c = c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return k;
}

// The roster as the request's rows, and the rows whose shape is wrong.
struct Roster {
  json rows = json::array();
  json malformed = json::array();  // as the daemon reports a refused row
};

// False (with `why`, about the whole file) if the file cannot be a roster.
bool read_roster(const std::string& path, Roster* out, std::string* why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *why = "cannot read " + path;
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  std::vector<CsvRecord> records;
  if (!parse_csv(text.str(), &records, why)) return false;
  if (records.empty()) {
    *why = "it is empty: its first line names the columns (" + std::string(kKnownColumns) + ")";
    return false;
  }
  std::vector<std::string> keys;
  for (const std::string& h : records[0].fields) {
    const std::string key = column_key(h);
    if (std::find(std::begin(kColumns), std::end(kColumns), key) == std::end(kColumns)) {
      *why = "unknown column '" + trimmed(h) + "' (the columns are " + kKnownColumns + ")";
      return false;
    }
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) {
      *why = "column '" + key + "' is named twice";
      return false;
    }
    keys.push_back(key);
  }
  if (std::find(keys.begin(), keys.end(), "name") == keys.end()) {
    *why =
        "it has no name column (its first line names the columns: " + std::string(kKnownColumns) +
        ")";
    return false;
  }
  const size_t name_at =
      static_cast<size_t>(std::find(keys.begin(), keys.end(), "name") - keys.begin());
  for (size_t i = 1; i < records.size(); ++i) {
    const CsvRecord& r = records[i];
    const bool blank = std::all_of(r.fields.begin(), r.fields.end(),
                                   [](const std::string& f) { return trimmed(f).empty(); });
    if (blank) continue;  // spreadsheets end with rows of empty cells
    if (r.fields.size() != keys.size()) {
      out->malformed.push_back(
          {{"row", r.line},
           {"name", name_at < r.fields.size() ? trimmed(r.fields[name_at]) : ""},
           {"added", false},
           {"error", "has " + std::to_string(r.fields.size()) + " fields; the header has " +
                         std::to_string(keys.size())}});
      continue;
    }
    json row = {{"row", r.line}};
    for (size_t k = 0; k < keys.size(); ++k) row[keys[k]] = trimmed(r.fields[k]);
    out->rows.push_back(std::move(row));
  }
  if (out->rows.empty() && out->malformed.empty()) {
    *why = "it names no students (only its header line)";
    return false;
  }
  return true;
}

// What happened to one row, for people and programs.
std::pair<std::string, std::string> result_of(const json& row, bool committed, bool dry_run) {
  if (row.contains("error")) return {"refused", row["error"].get<std::string>()};
  if (row.value("added", false)) return {"added", ""};
  if (dry_run) return {"ok", "dry run: would be added"};
  return {"not added", committed ? "" : "other rows were refused (--partial adds the good ones)"};
}

int import_roster(Context& ctx, const std::string& path, const std::string& course, bool partial,
                  bool dry_run) {
  Roster roster;
  std::string why;
  if (!read_roster(path, &roster, &why)) {
    std::fprintf(stderr, "vgpuctl: %s: %s\n", path.c_str(), why.c_str());
    return 2;
  }
  // A malformed row refuses the import as any bad row does; the daemon still
  // checks the others (without changing anything) so that one run shows
  // every problem.
  const bool any_malformed = !roster.malformed.empty();
  json answer = {{"committed", false}, {"added", 0}, {"rows", json::array()}};
  if (!roster.rows.empty()) {
    const json req = {{"op", "student.import"},
                      {"course", course},
                      {"rows", roster.rows},
                      {"partial", partial},
                      {"dry_run", dry_run || (any_malformed && !partial)}};
    if (req.dump().size() >= admin::kMaxLineBytes) {
      std::fprintf(stderr, "vgpuctl: %s: too large for one request (%zu rows): split it\n",
                   path.c_str(), roster.rows.size());
      return 2;
    }
    if (!ctx.call(req, &answer)) return 1;
  }
  json rows = answer["rows"];
  for (const json& m : roster.malformed) rows.push_back(m);
  std::sort(rows.begin(), rows.end(),
            [](const json& a, const json& b) { return a["row"].get<int>() < b["row"].get<int>(); });
  size_t refused = 0;
  for (const json& r : rows) refused += r.contains("error") ? 1 : 0;
  const bool committed = answer.value("committed", false);
  const int added = answer.value("added", 0);

  if (ctx.json_output) {
    answer["rows"] = rows;
    answer["refused"] = refused;
    std::printf("%s\n", answer.dump(2).c_str());
  } else {
    Table t({number_column("ROW", "row"), text_column("NAME", "name"),
             text_column("RESULT", "result"), text_column("REASON", "reason")});
    for (const json& r : rows) {
      const auto [result, reason] = result_of(r, committed, dry_run);
      t.add({r["row"], optional_cell(r.value("name", "")), result, optional_cell(reason)});
    }
    ctx.print(t);
    if (ctx.for_people()) {
      if (dry_run) {
        std::printf("dry run: %zu of %zu rows refused; nothing was changed\n", refused,
                    rows.size());
      } else if (committed) {
        std::printf("added %d of %zu students to %s%s\n", added, rows.size(), course.c_str(),
                    refused ? "; the refused rows were left out" : "");
      } else {
        std::printf(
            "nothing was added: %zu of %zu rows refused%s\n", refused, rows.size(),
            partial ? "" : " (fix them and import again, or add the good rows with --partial)");
      }
    }
  }
  return refused == 0 ? 0 : 1;
}

}  // namespace

void add_import_command(CLI::App* student, Context& ctx) {
  auto* cmd = student->add_subcommand(
      "import",
      "add a class from a CSV roster (columns: name, and optionally vm, uid, gpu_time, "
      "memory) in one transaction: one bad row and nothing is added, unless --partial");
  static std::string path, course;
  static bool partial = false, dry_run = false;
  cmd->add_option("ROSTER", path, "the CSV file; its first line names the columns")->required();
  cmd->add_option("--course", course, "the course the students join")->required();
  cmd->add_flag("--partial", partial, "add the good rows even if others are refused");
  cmd->add_flag("--dry-run", dry_run, "only check the roster: change nothing");
  add_output_options(cmd, ctx);
  cmd->callback([&ctx] {
    ctx.action = [&ctx] { return import_roster(ctx, path, course, partial, dry_run); };
  });
}

}  // namespace vgpu::ctl
