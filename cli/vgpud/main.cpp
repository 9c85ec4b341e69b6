// vgpud: the host daemon. Flags, signals and main; the work is in Daemon.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "../common/runtime_dir.h"
#include "backend_choice.h"
#include "daemon.h"

namespace {

std::vector<std::string> split_paths(const char* list) {
  std::vector<std::string> out;
  if (!list) return out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ':')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace vgpu;
  CLI::App app{"vgpud: shares one GPU among many VMs"};
  std::string backend = "auto", runtime_dir, db, log_level = "info";
  std::vector<std::string> sim_kernels;
  double slice_ms = 2.0;
  uint64_t sim_memory_gib = 16;
  app.add_option("--backend", backend, "sim, cuda, or auto (cuda if a driver is present)")
      ->check(CLI::IsMember({"sim", "cuda", "auto"}));
  app.add_option("--runtime-dir", runtime_dir,
                 "directory for the daemon's sockets (default: $VGPU_RUNTIME_DIR, else " +
                     cli::default_runtime_dir() + ")");
  app.add_option("--db", db, "SQLite database file (default: <runtime-dir>/vgpu.db)");
  app.add_option("--sim-kernels", sim_kernels,
                 "plug-in with CPU kernel implementations for the sim backend (repeatable; "
                 "also read from VGPU_SIM_KERNELS, colon-separated)");
  app.add_option("--slice-ms", slice_ms, "scheduling time slice in milliseconds")
      ->check(CLI::Range(0.5, 50.0));
  app.add_option("--sim-memory-gib", sim_memory_gib, "device memory the sim backend models")
      ->check(CLI::Range(1, 1024));
  app.add_option("--log-level", log_level, "trace, debug, info, warn or error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::from_str(log_level));

  // Block the signals before any thread starts, so only sigwait sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  daemon::DaemonConfig config;
  config.runtime_dir = cli::resolve_runtime_dir(runtime_dir);
  std::error_code ec;
  std::filesystem::create_directories(config.runtime_dir, ec);
  if (ec) {
    spdlog::error("vgpud: cannot create runtime directory {}: {}", config.runtime_dir, ec.message());
    return 1;
  }
  config.db_path = db.empty() ? config.runtime_dir + "/vgpu.db" : db;
  config.slice = static_cast<scheduler::Nanos>(slice_ms * 1e6);

  executor::SimConfig sim;
  sim.device_memory = sim_memory_gib * executor::kGiB;
  sim.plugin_paths = split_paths(std::getenv("VGPU_SIM_KERNELS"));
  sim.plugin_paths.insert(sim.plugin_paths.end(), sim_kernels.begin(), sim_kernels.end());

  std::unique_ptr<policy::Store> store;
  std::string why;
  if (!ok(policy::open_sqlite_store(config.db_path, &store, &why))) {
    spdlog::error("vgpud: {}", why);
    return 1;
  }
  std::unique_ptr<executor::Backend> exec;
  if (!ok(daemon::choose_backend(backend, sim, &exec, &why))) {
    spdlog::error("vgpud: {}", why.empty() ? "cannot start the backend (see above)" : why);
    return 1;
  }
  daemon::Daemon d(config, std::move(exec), std::move(store));
  if (!ok(d.start(&why))) {
    spdlog::error("vgpud: {}", why);
    return 1;
  }
  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("vgpud: {} received, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  d.stop();
  return 0;
}
