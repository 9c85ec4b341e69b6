#include "roster_import.h"

#include "admin_ops.h"

namespace vgpu::admin {
namespace {

using nlohmann::json;

// A row field as text: a string, or (for uid) a whole number; "" if absent.
bool text_field(const json& row, const char* key, bool number_too, std::string* out,
                std::string* why) {
  auto it = row.find(key);
  if (it == row.end() || it->is_null()) return true;
  if (it->is_string()) {
    *out = it->get<std::string>();
    return true;
  }
  if (number_too && it->is_number_unsigned()) {
    *out = std::to_string(it->get<uint64_t>());
    return true;
  }
  *why = std::string("roster field '") + key + "' must be a string";
  return false;
}

bool rows_of(const json& request, std::vector<policy::RosterRow>* out, std::string* why) {
  auto rows = request.find("rows");
  if (rows == request.end() || !rows->is_array()) {
    *why = "missing argument 'rows' (a list of roster rows)";
    return false;
  }
  for (const json& r : *rows) {
    policy::RosterRow row;
    if (!r.is_object() || !r.contains("row") || !r["row"].is_number_integer() ||
        !r.contains("name")) {
      *why = "each roster row is an object with a row number and a name";
      return false;
    }
    row.row = static_cast<int>(r["row"].get<int64_t>());
    if (!text_field(r, "name", false, &row.name, why) ||
        !text_field(r, "vm", false, &row.vm, why) || !text_field(r, "uid", true, &row.uid, why) ||
        !text_field(r, "gpu_time", false, &row.gpu_time, why) ||
        !text_field(r, "memory", false, &row.memory, why)) {
      return false;
    }
    out->push_back(std::move(row));
  }
  return true;
}

}  // namespace

json import_roster(policy::Store& store, const policy::Actor& by, const json& request,
                   bool* changed) {
  *changed = false;
  const std::string course = field<std::string>(request, "course", "");
  if (course.empty()) return error_answer("missing argument 'course'");
  std::vector<policy::RosterRow> rows;
  std::string why;
  if (!rows_of(request, &rows, &why)) return error_answer(why);
  policy::ImportOptions options;
  options.partial = field<bool>(request, "partial", false);
  options.dry_run = field<bool>(request, "dry_run", false);

  std::vector<policy::RosterOutcome> outcomes;
  const vgpu::Result s = store.import_students(by, course, rows, options, &outcomes);
  if (outcomes.empty()) return s.ok() ? error_answer("nothing imported") : error_answer(s);
  json result = {{"committed", s.ok() && !options.dry_run}, {"rows", json::array()}};
  int added = 0, refused = 0;
  for (const policy::RosterOutcome& o : outcomes) {
    json row = {{"row", o.row}, {"name", o.name}, {"added", o.added}};
    if (!o.why.empty()) row["error"] = o.why;
    added += o.added ? 1 : 0;
    refused += o.why.empty() ? 0 : 1;
    result["rows"].push_back(std::move(row));
  }
  result["added"] = added;
  result["refused"] = refused;
  *changed = added > 0;
  return ok_answer(std::move(result));
}

}  // namespace vgpu::admin
