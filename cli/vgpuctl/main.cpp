// vgpuctl: courses, students, quotas and usage reports, for teachers and
// admins. It talks to vgpud's admin socket (changes apply live; the daemon
// knows who we are from our uid), or reads a database file with --db when the
// daemon is down. Flags and main; the commands are in commands_*.cpp.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "../common/runtime_dir.h"
#include "../common/version.h"
#include "context.h"

int main(int argc, char** argv) {
  using namespace vgpu;
  ctl::Context ctx;
  CLI::App app{"vgpuctl: courses, students, GPU quotas and usage reports for vgpu"};
  app.set_version_flag("--version", cli::version_line("vgpuctl"));
  app.require_subcommand(1);
  app.add_option(
      "--runtime-dir", ctx.runtime_dir,
      "where vgpud runs (default: $VGPU_RUNTIME_DIR, else " + cli::default_runtime_dir() + ")");
  app.add_option("--db", ctx.db,
                 "read this database (a SQLite file, or postgresql://... for a department's "
                 "shared server) directly instead of asking vgpud: reports while the daemon is "
                 "down, or of every host; read-only");
  app.add_flag("--json", ctx.json_output, "print the answer as JSON");
  app.add_option("--libvirt", ctx.libvirt_uri, "the libvirt connection for `vm` commands")
      ->capture_default_str();
  ctl::add_org_commands(app, ctx);
  ctl::add_quota_commands(app, ctx);
  ctl::add_usage_commands(app, ctx);
  ctl::add_top_command(app, ctx);
  ctl::add_vm_commands(app, ctx);
  ctl::add_status_command(app, ctx);
  ctl::add_hosts_command(app, ctx);
  app.footer(
      "Units: durations 90m, 2h, 1h30m; budgets 2h/week, 90m/day, 20h/month, "
      "10h/2025-01-06..2025-03-31; sizes 4GiB, 512MiB; dates YYYY-MM-DD (UTC).");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, whatever CLI11 would have said over several.
    std::string what = e.what();
    for (char& c : what) {
      if (c == '\n') c = ' ';
    }
    std::fprintf(stderr, "vgpuctl: %s (see --help)\n", what.c_str());
    return 2;
  }
  return ctx.action ? ctx.action() : 2;
}
