// What every vgpuctl command shares: the global options, the connection
// (made on first use), and the action the parsed command line chose.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>

#include "requester.h"
#include "table.h"

namespace vgpu::ctl {

struct Context {
  std::string runtime_dir;   // --runtime-dir (else VGPU_RUNTIME_DIR, else the default)
  std::string db;            // --db: read this file instead of asking the daemon
  bool json_output = false;  // --json: print the raw answer
  // A listing's -o and --no-header.
  Format format = Format::kTable;
  bool header = true;
  std::string libvirt_uri = "qemu:///system";  // --libvirt: the domains `vm` commands see
  std::function<int()> action;

  // Sends one request; on failure prints "vgpuctl: <why>" and returns false.
  bool call(const json& request, json* result);
  // call() and, on success, prints the result as JSON if --json, else runs `print`.
  int run(const json& request, const std::function<void(const json&)>& print);
  // Prints a listing as -o and --no-header say.
  void print(const Table& table) const { table.print(format, header); }
  // Whether the listing is for people (-o table): only then are the lines
  // around its table (titles, totals) printed.
  bool for_people() const { return format == Format::kTable; }

 private:
  std::unique_ptr<Requester> requester_;
};

// Validators that parse with the policy's own parsers, so vgpuctl refuses
// exactly what the daemon would, before anything is sent.
CLI::Validator gpu_time_validator();
CLI::Validator bytes_validator();
CLI::Validator name_validator(const std::string& what);
// A DATE (YYYY-MM-DD, YYYY-MM-DDTHH:MM, now) to unix seconds; `end_of_day` for --until.
int64_t parse_date_or_die(const std::string& text, bool end_of_day);

// Gives a listing command -o table|csv|json and --no-header.
void add_output_options(CLI::App* command, Context& ctx);

void add_org_commands(CLI::App& app, Context& ctx);    // user, course, student, whoami
void add_quota_commands(CLI::App& app, Context& ctx);  // quota set|show|reset
void add_usage_commands(CLI::App& app, Context& ctx);  // usage report, audit
void add_top_command(CLI::App& app, Context& ctx);     // top
void add_vm_commands(CLI::App& app, Context& ctx);     // vm attach|detach|list|sessions
void add_status_command(CLI::App& app, Context& ctx);  // status (admins)
void add_hosts_command(CLI::App& app, Context& ctx);   // hosts
// student import (student_import.cpp), a subcommand of `student`.
void add_import_command(CLI::App* student, Context& ctx);

}  // namespace vgpu::ctl
