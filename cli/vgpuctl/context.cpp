#include "context.h"

#include <cstdio>
#include <ctime>
#include <map>

#include "../common/runtime_dir.h"
#include "vgpu/policy/units.h"

namespace vgpu::ctl {

bool Context::call(const json& request, json* result) {
  std::string why;
  if (!requester_) {
    requester_ = db.empty() ? connect_daemon(cli::resolve_runtime_dir(runtime_dir), &why)
                            : open_database(db, &why);
    if (!requester_) {
      std::fprintf(stderr, "vgpuctl: %s\n", why.c_str());
      return false;
    }
  }
  if (!requester_->call(request, result, &why)) {
    std::fprintf(stderr, "vgpuctl: %s\n", why.c_str());
    return false;
  }
  return true;
}

int Context::run(const json& request, const std::function<void(const json&)>& print) {
  json result;
  if (!call(request, &result)) return 1;
  if (json_output)
    std::printf("%s\n", result.dump(2).c_str());
  else
    print(result);
  return 0;
}

void add_output_options(CLI::App* command, Context& ctx) {
  static const std::map<std::string, Format> formats = {
      {"table", Format::kTable}, {"csv", Format::kCsv}, {"json", Format::kJson}};
  command
      ->add_option("-o,--output", ctx.format,
                   "table (aligned, for people), csv (RFC 4180, a header row of column keys) or "
                   "json (an array of objects keyed by column key)")
      ->transform(CLI::CheckedTransformer(formats))
      ->option_text("table|csv|json");
  command->add_flag_callback(
      "--no-header", [&ctx] { ctx.header = false; }, "leave out the header row (table and csv)");
}

CLI::Validator gpu_time_validator() {
  return CLI::Validator(
      [](std::string& s) {
        policy::GpuTime g;
        return policy::parse_gpu_time(s, &g).message();  // empty: valid
      },
      "BUDGET/PERIOD");
}

CLI::Validator bytes_validator() {
  return CLI::Validator(
      [](std::string& s) {
        uint64_t b = 0;
        return s == "none" ? std::string() : policy::parse_bytes(s, &b).message();
      },
      "SIZE");
}

CLI::Validator name_validator(const std::string& what) {
  return CLI::Validator(
      [what](std::string& s) {
        for (char c : s) {
          const bool ok =
              std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
          if (!ok) return what + " name '" + s + "' is not valid (1 to 63 of A-Z a-z 0-9 . _ -)";
        }
        return s.empty() || s.size() > 63
                   ? what + " name '" + s + "' is not valid (1 to 63 characters)"
                   : std::string();
      },
      "NAME");
}

int64_t parse_date_or_die(const std::string& text, bool end_of_day) {
  int64_t t = 0;
  if (const Result r =
          policy::parse_date(text, end_of_day, static_cast<int64_t>(std::time(nullptr)), &t);
      !r.ok()) {
    // Dates are also checked by their validator; this is a second line of defence.
    std::fprintf(stderr, "vgpuctl: %s\n", r.text().c_str());
    std::exit(2);
  }
  return t;
}

}  // namespace vgpu::ctl
