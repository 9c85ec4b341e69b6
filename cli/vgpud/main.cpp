// vgpud: the host daemon. Flags, signals and main; the work is in Daemon.
#include <grp.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

#include "../common/db_path.h"
#include "../common/runtime_dir.h"
#include "../common/version.h"
#include "backend_choice.h"
#include "config_file.h"
#include "daemon.h"
#include "journal_log.h"
#include "service_notify.h"
#include "sim_memory.h"
#include "vgpu/host/vm_sockets.h"

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

// This host's name as the system knows it ("localhost" if it is not one).
std::string system_host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || !vgpu::policy::valid_host_name(name)) {
    return "localhost";
  }
  return name;
}

// The default database's folder, made if missing (0700: it names students).
// A database left in the runtime directory by an older vgpud (its default
// then) is pointed out, not moved: another vgpud may still have it open.
bool prepare_default_db(const std::string& runtime_dir, const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(path).parent_path();
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (!ec) fs::permissions(dir, fs::perms::owner_all, ec);
    if (ec) {
      spdlog::error("vgpud: cannot create {} for the database: {} (or pass --db FILE)",
                    dir.string(), ec.message());
      return false;
    }
  }
  const std::string old = runtime_dir + "/vgpu.db";
  if (fs::exists(old, ec) && !fs::exists(path, ec)) {
    spdlog::warn(
        "vgpud: {} holds a database an older vgpud kept in its runtime directory, which a "
        "reboot may clear; the database is now {}: to keep what {} holds, stop vgpud and move "
        "it there with its -wal file, or pass --db {}",
        old, path, old, old);
  }
  return true;
}

// On SIGHUP: what the file now says that only a restart applies, by name
// (the scheduling keys are applied live by SchedulerControl::reload).
void report_restart_only(const std::string& path, const vgpu::daemon::ConfigFile& at_start,
                         const std::set<std::string>& known) {
  vgpu::daemon::ConfigFile now;
  if (!vgpu::daemon::read_config_file(path, &now).ok()) return;  // reload() says why
  const vgpu::daemon::ConfigDiff d = vgpu::daemon::diff_flags(at_start, now, known);
  for (const std::string& name : d.unknown) {
    spdlog::error("vgpud: SIGHUP: {}: '{}' is no vgpud setting (ignored; vgpud would not start "
                  "with it)",
                  path, name);
  }
  for (const std::string& name : d.changed) {
    spdlog::warn("vgpud: SIGHUP: {}: '{}' changed; it takes effect when vgpud restarts", path,
                 name);
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace vgpu;
  CLI::App app{"vgpud: shares one GPU among many VMs"};
  app.set_version_flag("--version", cli::version_line("vgpud"));
  std::string backend = "auto", runtime_dir, db, log_level = "info";
  std::vector<std::string> sim_kernels, vm_sockets, vm_plain;
  const uint64_t host_bytes = daemon::host_memory_bytes();
  std::vector<uint64_t> sim_memory_gib = {daemon::default_sim_memory_gib(host_bytes)};
  unsigned sim_devices = 1;
  std::string placement = "spread";
  std::string host_name;
  std::string spool;
  executor::CudaConfig cuda;
  double watchdog_s = 10;
  unsigned sim_threads = 0;
  uint64_t cuda_memory_mib = 0;
  std::string cuda_wait = "spin";
  std::vector<std::string> cuda_devices;  // ordinals, or "all"
  std::vector<int> cuda_ordinals;
  daemon::SchedulerFlags scheduling_flags;
  app.add_option("--backend", backend, "sim, cuda, or auto (cuda if a driver is present)")
      ->check(CLI::IsMember({"sim", "cuda", "auto"}));
  app.add_option("--runtime-dir", runtime_dir,
                 "directory for the daemon's sockets (default: $VGPU_RUNTIME_DIR, else " +
                     cli::default_runtime_dir() + ")");
  app.add_option("--db", db,
                 "the database: courses, quotas, usage, audit. A SQLite file (default: " +
                     cli::default_db_path() +
                     ", kept across reboots), or postgresql://... for a PostgreSQL server "
                     "that several hosts share (docs/scale-out.md)");
  app.add_option("--sim-kernels", sim_kernels,
                 "plug-in with CPU kernel implementations for the sim backend (repeatable; "
                 "also read from VGPU_SIM_KERNELS, colon-separated)");
  daemon::add_scheduler_flags(app, &scheduling_flags);  // --policy --slice-ms --overlap-depth
  app.add_option("--sim-memory-gib", sim_memory_gib,
                 "device memory the sim backend models, backed by host memory (default: 16, or "
                 "half the host's memory where that is less); with --sim-devices, one size for "
                 "all or a comma-separated size for each")
      ->check(CLI::Range(1, 1024))
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--sim-devices", sim_devices,
                 "GPUs the sim backend models, each with its own memory and dispatcher")
      ->check(CLI::Range(1, 16));
  app.add_option("--placement", placement,
                 "which GPU a VM goes to when the host has several: spread (least committed "
                 "weight, then most free memory) or pack (the first one its memory cap fits)")
      ->check(CLI::IsMember({"spread", "pack"}));
  app.add_option("--host-name", host_name,
                 "this host's name in the database, on its usage and in `vgpuctl hosts` "
                 "(default: the system's host name); each host sharing a database needs its own");
  app.add_option("--spool", spool,
                 "where usage waits while the database cannot take it, replayed once it can "
                 "(a SQLite file; default: usage-spool.db in the runtime directory; put it on "
                 "disk that survives a reboot)");
  app.add_option("--sim-threads", sim_threads,
                 "CPU threads the sim backend runs an interpreted kernel's blocks on (default: "
                 "0, every CPU vgpud may use)")
      ->check(CLI::Range(0, 64));
  app.add_option("--watchdog-s", watchdog_s,
                 "a kernel or copy running longer than this ends its tenant's context")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--cuda-device", cuda_devices,
                 "GPU the cuda backend uses, by ordinal; repeatable or comma-separated for "
                 "several, or all: every GPU the driver sees (default: 0)")
      ->delimiter(',');
  app.add_option("--cuda-memory-mib", cuda_memory_mib,
                 "device memory shared out among tenants (default: what the GPU reports)");
  app.add_option("--cuda-spare-workers", cuda.spare_workers,
                 "cuda worker processes started ahead of new VMs")
      ->check(CLI::Range(0, 64));
  app.add_option("--cuda-wait", cuda_wait, "how a cuda worker waits for the GPU: spin or block")
      ->check(CLI::IsMember({"spin", "block"}));
  app.add_option("--vm-socket", vm_sockets,
                 "serve real VM NAME: an ivshmem-doorbell server at <runtime-dir>/vms/NAME.sock "
                 "(repeatable)");
  app.add_option("--vm-plain", vm_plain,
                 "serve real VM NAME over ivshmem-plain: the region file "
                 "<runtime-dir>/vms/NAME.shm, polled (repeatable)");
  std::string libvirt_uri = "qemu:///system", vm_group = "auto";
  app.add_option("--libvirt", libvirt_uri,
                 "the libvirt connection whose domains vgpud follows (docs/libvirt.md); "
                 "none: follow none")
      ->capture_default_str();
  app.add_option("--vm-group", vm_group,
                 "the group that may connect to the VM sockets (QEMU's); default: libvirt-qemu "
                 "if that group exists; none: the daemon's own");
  uint64_t data_area_mib = transport::RegionGeometry{}.data_size >> 20;
  app.add_option("--data-area-mib", data_area_mib,
                 "data area of each simulated VM (vgpu-run): room for its staged copies and "
                 "up to three quarters of it for pinned host memory")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  uint64_t module_limit_mib = executor::kDefaultModuleImageLimit >> 20;
  app.add_option("--module-limit-mib", module_limit_mib,
                 "image bytes one module a guest loads may hold, decompressed: bounds what "
                 "one load costs the host")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  uint64_t tenant_host_mib = executor::kDefaultTenantHostLimit >> 20;
  app.add_option("--tenant-host-mib", tenant_host_mib,
                 "host memory the modules of one VM may hold, all its processes together "
                 "(their parsed metadata; on the cuda backend their images too); 0: no limit")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  int call_threads = 2;
  app.add_option("--call-threads", call_threads,
                 "threads answering slow calls (module loads; on the cuda backend every call "
                 "that asks a worker), one per VM at a time")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--log-level", log_level, "trace, debug, info, warn or error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  std::string metrics_listen;
  app.add_option("--metrics-listen", metrics_listen,
                 "serve Prometheus metrics at http://HOST:PORT/metrics (e.g. 127.0.0.1:9400; "
                 "port 0: any). They name VMs, students and courses: keep the address local or "
                 "firewalled");
  std::string log_target = "auto";
  app.add_option("--log-target", log_target,
                 "stderr, journal (with PRIORITY, VM, STUDENT and COURSE fields), or auto: the "
                 "journal when systemd connected standard error to it")
      ->check(CLI::IsMember({"auto", "stderr", "journal"}))
      ->capture_default_str();
  bool undumpable = false;
  app.add_flag("--undumpable", undumpable,
               "no process of vgpud's own user may trace it or read its memory (its workers "
               "run as that user under the unit); no core dumps");
  // The configuration file (config_file.h): any flag by its long name, the
  // command line winning; the default file only if it exists.
  // $VGPU_CONFIG replaces the default file ("none": no file), so that tests
  // and second daemons on a host are not configured by the host's own file.
  std::error_code no_exe;
  std::string default_config =
      daemon::default_config_path(std::filesystem::read_symlink("/proc/self/exe", no_exe).string());
  if (const char* env = std::getenv("VGPU_CONFIG")) {
    default_config = std::string(env) == "none" ? "" : env;
  }
  app.config_formatter(daemon::toml_flag_reader(daemon::flag_names(app)));
  app.allow_config_extras(false);
  app.set_config("--config", default_config,
                 "TOML file setting any flag above by its long name (slice-ms = 2), and "
                 "[weights] and [courses.NAME] tables; policy, slice-ms, overlap-depth, weights "
                 "and courses are re-read on SIGHUP (default: $VGPU_CONFIG, else "
                 "/etc/vgpu/vgpud.toml for /usr/bin/vgpud, PREFIX/etc/vgpu/vgpud.toml for "
                 "PREFIX/bin/vgpud, if it exists; --config '' or VGPU_CONFIG=none: no file)")
      ->option_text("FILE");  // the default depends on where vgpud is: said above
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::from_str(log_level));
  // Before any worker starts: the workers share vgpud's user (the unit), and
  // the cuda worker has no seccomp filter to keep it from ptrace and
  // /proc/PID/mem. A worker's exec makes it dumpable again, not vgpud.
  if (undumpable && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    spdlog::error("vgpud: --undumpable: {}", std::strerror(errno));
    return 1;
  }
  // The file read, if any: the one given, or the default where it exists.
  std::string config_path;
  if (app.count("--config")) {
    config_path = app["--config"]->as<std::string>();
  } else if (!default_config.empty() && access(default_config.c_str(), F_OK) == 0) {
    config_path = default_config;
  }
  scheduling_flags.config_file = config_path;
  daemon::ConfigFile config_at_start;
  if (!config_path.empty()) {
    if (const Result r = daemon::read_config_file(config_path, &config_at_start); !r.ok()) {
      spdlog::error("vgpud: {}", r.text());
      return 1;
    }
    spdlog::info("vgpud: configuration from {}", config_path);
  }
  const std::set<std::string> known_flags = daemon::flag_names(app);
  if (log_target == "journal" || (log_target == "auto" && daemon::stderr_is_journal()))
    daemon::log_to_journal();

  // Block the signals before any thread starts, so only sigwait sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);  // re-read the config file
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  daemon::DaemonConfig config;
  config.runtime_dir = cli::resolve_runtime_dir(runtime_dir);
  if (const Result r = cli::prepare_runtime_dir(config.runtime_dir); !r.ok()) {
    spdlog::error("vgpud: runtime directory: {}", r.text());
    return 1;
  }
  config.db_path = db.empty() ? cli::default_db_path() : db;
  if (config.db_path.empty()) {
    spdlog::error("vgpud: no --db given and no home directory to keep the database in "
                  "(set XDG_STATE_HOME or HOME, or pass --db FILE)");
    return 1;
  }
  if (db.empty() && !prepare_default_db(config.runtime_dir, config.db_path)) return 1;
  config.scheduling = std::make_shared<daemon::SchedulerControl>(scheduling_flags);
  if (const Result r = config.scheduling->load(); !r.ok()) {
    spdlog::error("vgpud: scheduling settings: {}", r.text());
    return 1;
  }
  for (const auto& vm : vm_sockets)
    config.vms.push_back(host::vm_spec(config.runtime_dir, vm, transport::VmMode::kDoorbell));
  for (const auto& vm : vm_plain)
    config.vms.push_back(host::vm_spec(config.runtime_dir, vm, transport::VmMode::kPlain));
  config.libvirt_uri = libvirt_uri;
  config.metrics_listen = metrics_listen;
  config.geometry.data_size = data_area_mib << 20;
  if (vm_group != "none") {
    const group* g = getgrnam(vm_group == "auto" ? "libvirt-qemu" : vm_group.c_str());
    if (g) {
      config.vm_gid = static_cast<int>(g->gr_gid);
    } else if (vm_group != "auto") {
      spdlog::error("vgpud: --vm-group: no group named {}", vm_group);
      return 1;
    }
  }

  const auto watchdog = std::chrono::milliseconds(static_cast<int64_t>(watchdog_s * 1000));
  executor::SimConfig sim;
  if (!app.count("--sim-devices") && sim_memory_gib.size() > 1) {
    sim_devices = static_cast<unsigned>(sim_memory_gib.size());
  }
  if (sim_memory_gib.size() == 1) sim_memory_gib.resize(sim_devices, sim_memory_gib[0]);
  if (sim_memory_gib.size() != sim_devices) {
    spdlog::error("vgpud: --sim-memory-gib gives {} sizes for {} sim GPU(s) (--sim-devices)",
                  sim_memory_gib.size(), sim_devices);
    return 1;
  }
  config.host_name = host_name.empty() ? system_host_name() : host_name;
  if (!policy::valid_host_name(config.host_name)) {
    spdlog::error("vgpud: --host-name '{}' is not a host name (letters, digits, '-', '.', '_')",
                  config.host_name);
    return 1;
  }
  if (const Result r = policy::parse_placement(placement, &config.placement); !r.ok()) {
    spdlog::error("vgpud: --placement: {}", r.message());
    return 1;
  }
  sim.watchdog = watchdog;
  sim.interpreter_threads = sim_threads;
  sim.module_image_limit = module_limit_mib << 20;
  cuda.module_image_limit = module_limit_mib << 20;
  sim.tenant_host_limit = tenant_host_mib << 20;
  cuda.tenant_host_limit = tenant_host_mib << 20;
  config.call_threads = call_threads;
  sim.plugin_paths = split_paths(std::getenv("VGPU_SIM_KERNELS"));
  sim.plugin_paths.insert(sim.plugin_paths.end(), sim_kernels.begin(), sim_kernels.end());

  // Three connections to the database, four to a shared one (daemon.h, DaemonStores).
  daemon::DaemonStores stores;
  std::string why;
  for (auto* store : {&stores.serving, &stores.admin, &stores.ledger}) {
    if (const vgpu::Result opened = policy::open_store(config.db_path, store); !opened.ok()) {
      spdlog::error("vgpud: {}", opened.message());
      return 1;
    }
  }
  // A database other hosts share: budgets are leased from it (a fourth connection).
  if (policy::is_postgres_location(config.db_path)) {
    if (const vgpu::Result opened = policy::open_store(config.db_path, &stores.leases);
        !opened.ok()) {
      spdlog::error("vgpud: {}", opened.message());
      return 1;
    }
  }
  const std::string spool_path = spool.empty() ? config.runtime_dir + "/usage-spool.db" : spool;
  if (const vgpu::Result opened = policy::open_usage_spool(spool_path, &stores.spool);
      !opened.ok()) {
    spdlog::error("vgpud: {}", opened.message());
    return 1;
  }
  // Environment first (VGPU_CUDA_*), flags given on the command line win.
  if (!ok(executor::apply_cuda_env(&cuda, &why))) {
    spdlog::error("vgpud: {}", why);
    return 1;
  }
  if (app.count("--watchdog-s")) cuda.watchdog = watchdog;
  if (app.count("--cuda-memory-mib")) cuda.device_memory = cuda_memory_mib << 20;
  if (app.count("--cuda-wait")) cuda.spin_wait = cuda_wait == "spin";
  if (cuda_devices.empty()) cuda_devices = {std::to_string(cuda.device)};  // VGPU_CUDA_DEVICE or 0
  if (const Result r = daemon::parse_cuda_devices(cuda_devices, &cuda_ordinals); !r.ok()) {
    spdlog::error("vgpud: {}", r.message());
    return 1;
  }
  std::vector<std::unique_ptr<executor::Backend>> gpus;
  if (!ok(daemon::choose_gpus(backend, sim, sim_memory_gib, cuda, cuda_ordinals, &gpus, &why))) {
    spdlog::error("vgpud: {}", why.empty() ? "cannot start the backend (see above)" : why);
    return 1;
  }
  const std::string backend_name(gpus.front()->name());
  uint64_t sim_total_gib = 0;
  for (uint64_t gib : sim_memory_gib) sim_total_gib += gib;
  if (const std::string w = daemon::sim_memory_warning(sim_total_gib, host_bytes);
      !w.empty() && backend_name == "sim") {
    spdlog::warn("vgpud: {}", w);
  }
  daemon::Daemon d(config, std::move(gpus), std::move(stores));
  if (const Result r = d.start(); !r.ok()) {
    spdlog::error("vgpud: {}", r.text());
    return 1;
  }
  spdlog::info("vgpud: scheduling: {}", daemon::describe(config.scheduling->settings()));
  // systemd (Type=notify): every socket listens now.
  daemon::ServiceNotifier service;
  service.ready("serving VMs at " + config.runtime_dir + " on the " + backend_name + " backend",
                [&d](std::chrono::milliseconds within) { return d.responsive(within); });
  int sig = 0;
  while (sigwait(&signals, &sig) == 0 && sig == SIGHUP) {
    service.reloading();
    if (!config_path.empty()) report_restart_only(config_path, config_at_start, known_flags);
    if (const Result r = config.scheduling->reload(); !r.ok()) {
      spdlog::error("vgpud: SIGHUP: scheduling settings kept as they were: {}", r.text());
    }
    service.ready_again();
  }
  spdlog::info("vgpud: {} received, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  service.stopping();
  d.stop();
  return 0;
}
