#include "vgpu/host/daemon_status.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace vgpu::host {

using nlohmann::json;

namespace {

// "Name:   value kB" lines of /proc/self/status.
uint64_t status_field(const std::string& name) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + ":", 0) != 0) continue;
    std::istringstream fields(line.substr(name.size() + 1));
    uint64_t value = 0;
    std::string unit;
    fields >> value >> unit;
    return unit == "kB" ? value * 1024 : value;
  }
  return 0;
}

uint64_t count_entries(const std::string& dir) {
  std::error_code ec;
  uint64_t n = 0;
  for (auto it = std::filesystem::directory_iterator(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    n++;
  }
  return n;
}

// Children are listed under the thread that forked them.
uint64_t count_children() {
  std::error_code ec;
  uint64_t n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::ifstream in(it->path() / "children");
    std::string pid;
    while (in >> pid) n++;
  }
  return n;
}

}  // namespace

json process_footprint() {
  return {{"pid", getpid()},
          {"rss_bytes", status_field("VmRSS")},
          {"threads", status_field("Threads")},
          {"fds", count_entries("/proc/self/fd") - 1},  // less the one listing it
          {"children", count_children()}};
}

namespace {

// Each GPU's load: its memory, contexts, the VMs placed on it and their
// committed weight and memory, and the device time its dispatcher measured.
json gpus_status(const StatusSources& s) {
  const size_t n = s.gpu_set ? s.gpu_set->size() : 1;
  std::vector<GpuLoad> loads;
  if (s.gpu_set) loads = s.gpu_set->loads();
  json gpus = json::array();
  for (size_t i = 0; i < n; ++i) {
    const executor::Backend& gpu = s.gpu_set ? s.gpu_set->gpu(i) : *s.backend;
    const executor::BackendStats stats = gpu.stats();
    uint64_t gpu_ns = 0, queued = 0;
    for (const auto& [id, u] : s.dispatcher->at(i).usage_all()) {
      gpu_ns += u.gpu_ns;
      queued += u.queued;
    }
    json g = {{"index", i},
              {"name", gpu.device().name},
              {"memory_total", gpu.device().total_memory},
              {"device_bytes", stats.device_bytes},
              {"contexts", stats.contexts},
              {"vms", stats.tenants.size()},
              {"gpu_ns", gpu_ns},
              {"queued", queued}};
    if (s.gpu_set) {
      g["committed_weight"] = loads[i].committed_weight;
      g["committed_memory"] = loads[i].committed_memory;
    }
    gpus.push_back(std::move(g));
  }
  return gpus;
}

}  // namespace

json daemon_status(const StatusSources& s) {
  const transport::HostLoopStats loop = s.loop->stats();
  const executor::BackendStats backend = s.backend->stats();
  const auto usage = s.dispatcher->usage_all();
  const auto counted = s.counters->snapshot();
  const TenantCount totals = s.counters->totals();

  // Every VM that is connected (admitted or waiting to be), holds anything,
  // has work queued, or misbehaved.
  std::map<scheduler::TenantId, json> tenants;
  auto entry = [&](scheduler::TenantId id) -> json& {
    json& t = tenants[id];
    if (t.is_null()) {
      t = {{"tenant", id}, {"vm", ""},          {"channels", 0},    {"waiting", 0},
           {"contexts", 0},
           {"allocations", 0}, {"bytes", 0},    {"streams", 0},     {"events", 0},
           {"modules", 0},     {"pending", 0},  {"queued", 0},      {"malformed", 0},
           {"refused", 0},     {"work_failed", 0}, {"backpressure", 0}};
    }
    return t;
  };
  for (const auto& [id, c] : counted) {
    json& t = entry(id);
    t["vm"] = c.vm;
    t["channels"] = c.channels;
    t["waiting"] = c.waiting;
    t["malformed"] = c.malformed;
    t["refused"] = c.refused;
    t["work_failed"] = c.work_failed;
    t["backpressure"] = c.backpressure;
  }
  for (const executor::TenantHoldings& h : backend.tenants) {
    json& t = entry(h.tenant);
    t["contexts"] = h.contexts;
    t["allocations"] = h.allocations;
    t["bytes"] = h.bytes;
    t["streams"] = h.streams;
    t["events"] = h.events;
    t["modules"] = h.modules;
    t["pending"] = h.pending;
    // Which GPU it is on: with one, the one; with several, where it is placed.
    if (!s.gpu_set) {
      t["gpu"] = 0;
    } else if (const auto gpu = s.gpu_set->gpu_of_tenant(h.tenant)) {
      t["gpu"] = *gpu;
    }
  }
  uint64_t gpu_ns = 0;  // every VM's, gone ones too: it never goes back
  for (const auto& [id, u] : usage) {
    if (u.queued > 0) entry(id)["queued"] = u.queued;
    gpu_ns += u.gpu_ns;
  }
  json list = json::array();
  uint64_t queued = 0;
  for (auto& [id, t] : tenants) {
    queued += t["queued"].get<uint64_t>();
    list.push_back(std::move(t));
  }

  const auto up = std::chrono::steady_clock::now() - s.started;
  return {
      {"uptime_s", std::chrono::duration<double>(up).count()},
      {"process", process_footprint()},
      {"backend",
       {{"name", std::string(s.backend->name())},
        {"contexts", backend.contexts},
        {"device_bytes", backend.device_bytes},
        {"staged_copy_bytes", backend.staged_copy_bytes},
        {"direct_copy_bytes", backend.direct_copy_bytes}}},
      {"transport",
       {{"channels", s.loop->channel_count()},
        {"opened", loop.channels_opened},
        {"closed", loop.channels_closed},
        {"requests", loop.requests},
        {"corrupt_rings", loop.corrupt_rings},
        {"stalled_channels", loop.stalled_channels},
        {"reply_stalls", loop.reply_stalls}}},
      {"violations",
       {{"malformed", totals.malformed},
        {"refused", totals.refused},
        {"work_failed", totals.work_failed},
        {"backpressure", totals.backpressure}}},
      {"gpus", gpus_status(s)},
      {"queued", queued},
      {"gpu_ns", gpu_ns},
      {"tenants", list},
  };
}

}  // namespace vgpu::host
