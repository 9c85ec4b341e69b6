#include "daemon.h"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include "metrics.h"
#include "vgpu/host/daemon_status.h"
#include "vgpu/host/vm_people.h"
#include "vgpu/host/vm_sockets.h"
#include "vgpu/protocol/handover.h"

namespace vgpu::daemon {

Daemon::Daemon(DaemonConfig config, std::vector<std::unique_ptr<executor::Backend>> gpus,
               DaemonStores stores)
    : config_(std::move(config)),
      store_(std::move(stores.serving)),
      admin_store_(std::move(stores.admin)),
      ledger_store_(std::move(stores.ledger)),
      spool_(std::move(stores.spool)),
      lease_store_(std::move(stores.leases)),
      quotas_(std::make_unique<host::QuotaControl>(store_.get(), admin_store_.get(),
                                                   static_cast<uint32_t>(geteuid()))),
      scheduling_(config_.scheduling ? config_.scheduling : std::make_shared<SchedulerControl>()) {
  if (gpus.size() == 1) {
    backend_ = std::move(gpus.front());
    return;
  }
  // Spread's committed weight: what the VM's GPU's policy was told.
  auto set = std::make_unique<host::GpuSet>(
      std::move(gpus), config_.placement, [this](executor::TenantId tenant) {
        const auto params = dispatcher_ ? dispatcher_->tenant_params(tenant) : std::nullopt;
        return params ? double(params->weight) : 1.0;
      });
  gpu_set_ = set.get();
  backend_ = std::move(set);
}

Daemon::~Daemon() { stop(); }

std::string Daemon::socket_path() const { return config_.runtime_dir + "/" + VGPU_SOCKET_NAME; }

nlohmann::json Daemon::status() const {
  return host::daemon_status(
      {loop_.get(), backend_.get(), gpu_set_, dispatcher_.get(), &sessions_->counters(), started_});
}

uint64_t Daemon::total_memory() const {
  if (!gpu_set_) return backend_->device().total_memory;
  uint64_t total = 0;
  for (size_t i = 0; i < gpu_set_->size(); ++i) total += gpu_set_->gpu(i).device().total_memory;
  return total;
}

nlohmann::json Daemon::metrics_usage() const {
  nlohmann::json usage = {{"vms", nlohmann::json::array()}};
  for (const auto& [tenant, u] : dispatcher_->usage_all()) {
    const std::optional<host::VmPeople> who = host::people_of_tenant(tenant);
    if (!who) continue;  // never admitted
    usage["vms"].push_back({{"vm", who->vm}, {"student", who->student}, {"course", who->course},
                            {"gpu_ns", u.gpu_ns}, {"kernels", u.kernels}});
  }
  return usage;
}

Result Daemon::start() {
  if (lease_store_) quotas_->enable_leases(lease_store_.get(), config_.host_name, {});
  // Each GPU runs its own turns over its own backend; the quota gate is one.
  const size_t gpus = gpu_set_ ? gpu_set_->size() : 1;
  std::vector<scheduler::Dispatcher*> each;
  for (size_t i = 0; i < gpus; ++i) {
    dispatchers_.push_back(std::make_unique<scheduler::Dispatcher>(
        gpu_set_ ? &gpu_set_->gpu(i) : backend_.get(), scheduling_->make_policy(), quotas_.get(),
        &clock_, scheduling_->dispatcher_config(),
        [this](const scheduler::Command& c, const executor::ExecResult& r) {
          sessions_->on_complete(c, r);
        },
        [this] { loop_->wake(); }));
    each.push_back(dispatchers_.back().get());
  }
  scheduler::DispatcherGroup::GpuOf gpu_of;
  if (gpu_set_) gpu_of = [set = gpu_set_](executor::ContextId c) { return set->gpu_of(c); };
  dispatcher_ = std::make_unique<scheduler::DispatcherGroup>(std::move(each), std::move(gpu_of));
  scheduling_->attach(dispatcher_.get(), [quotas = quotas_.get()](scheduler::TenantId tenant,
                                                                 const scheduler::ParamsOverride& pin) {
    quotas->pin(tenant, pin);
  });
  usage_ = std::make_unique<host::UsageFlusher>(ledger_store_.get(), dispatcher_.get(),
                                                backend_.get(), quotas_.get(),
                                                config_.flush_interval);
  host::UsageFlusher::HostIdentity me;
  me.name = config_.host_name;
  me.backend = backend_->name();
  if (gpu_set_) {
    me.gpu_of = [set = gpu_set_](scheduler::TenantId t) {
      return static_cast<uint32_t>(set->gpu_of_tenant(t).value_or(0));
    };
  }
  me.gpus = [this] { return status().value("gpus", nlohmann::json::array()).dump(); };
  // Other hosts read a shared database's hosts table for liveness: a beat
  // there; a SQLite file is not written while nothing changes.
  if (policy::is_postgres_location(config_.db_path)) me.heartbeat_s = 10;
  usage_->set_host(std::move(me));
  usage_->set_spool(spool_.get());
  host::SessionParts parts;
  parts.backend = backend_.get();
  parts.store = store_.get();
  parts.ledger_store = ledger_store_.get();
  parts.quotas = quotas_.get();
  parts.dispatcher = dispatcher_.get();
  parts.usage = usage_.get();
  parts.call_threads = config_.call_threads;
  parts.vm_opened = [scheduling = scheduling_](scheduler::TenantId tenant, const std::string& vm) {
    scheduling->vm_opened(tenant, vm);  // the weight and course the config file pins on it
  };
  parts.admit_peer = [this](const std::string& vm, int pid, std::string* refused) {
    return libvirt_->admit(vm, pid, refused);
  };
  sessions_ = std::make_unique<host::Sessions>(std::move(parts));
  loop_ = std::make_unique<transport::HostLoop>(socket_path(), config_.geometry, sessions_.get());
  sessions_->attach(loop_.get());
  started_ = std::chrono::steady_clock::now();
  quotas_->set_flush([this] { return usage_->flush(); });
  quotas_->set_status_source([this] { return status(); });
  if (Result r = host::serve_vms(*loop_, config_.vms, config_.vm_gid); !r.ok()) return r;
  libvirt_ = std::make_unique<host::LibvirtControl>(
      ledger_store_.get(),
      host::vm_hooks(loop_.get(), dispatcher_.get(), config_.runtime_dir, config_.vm_gid),
      config_.libvirt_uri);
  // `top` lists connected VMs: with one GPU, each is on it.
  quotas_->set_gpu_source([set = gpu_set_](executor::TenantId tenant) -> std::optional<size_t> {
    return set ? set->gpu_of_tenant(tenant) : std::optional<size_t>(0);
  });
  if (gpu_set_) {
    // A VM placed again (all its contexts were gone) leaves the other GPUs' policies.
    gpu_set_->set_on_placed(
        [this](executor::TenantId tenant, size_t gpu) { dispatcher_->placed(tenant, gpu); });
    quotas_->set_cap_check([set = gpu_set_](uint64_t cap) { return set->fits_some_gpu(cap); });
    quotas_->set_placement_sink(
        [set = gpu_set_](executor::TenantId tenant, std::optional<policy::Placement> p) {
          set->set_tenant_policy(tenant, p);
        });
  }
  quotas_->set_request_hook([this](const nlohmann::json& request, nlohmann::json* answer) {
    libvirt_->after_request(request, answer);
  });
  dispatcher_->start();
  if (Result r = quotas_->start(dispatcher_.get(), backend_.get(), config_.runtime_dir); !r.ok()) {
    dispatcher_->stop();
    return r;
  }
  if (Result r = loop_->start(); !r.ok()) {
    quotas_->stop();
    dispatcher_->stop();
    return r;
  }
  // Last: a scrape reads the quotas', the dispatcher's and the loop's state.
  if (!config_.metrics_listen.empty()) {
    metrics_ = std::make_unique<MetricsServer>();
    Result r = metrics_->start(config_.metrics_listen, [this] {
      return prometheus_text(status(), quotas_->top_all(), metrics_usage(),
                             latency_view(sessions_->latency()), total_memory());
    });
    if (!r.ok()) {
      loop_->stop();
      quotas_->stop();
      dispatcher_->stop();
      return r;
    }
    spdlog::info("vgpud: metrics at http://{}:{}/metrics", metrics_->host(), metrics_->port());
  }
  libvirt_->start();  // serves the attached VMs, watches their domains
  usage_->start();
  spdlog::info("vgpud: serving on {} (backend {}, device \"{}\", database {})", socket_path(),
               backend_->name(), backend_->device().name,
               policy::printable_location(config_.db_path));
  return {};
}

void Daemon::stop() {
  if (!loop_) return;
  if (metrics_) metrics_->stop();  // no more scrapes: they read what stops below
  if (libvirt_) libvirt_->stop();  // no more domain events; open sessions end
  quotas_->stop();    // no more admin requests
  loop_->stop();      // closes every channel through on_close
  sessions_->stop();  // slow calls still running end; the channels they held open close now
  dispatcher_->stop();
  usage_->stop();     // the last flush
  loop_.reset();
  spdlog::info("vgpud: stopped");
}

}  // namespace vgpu::daemon
