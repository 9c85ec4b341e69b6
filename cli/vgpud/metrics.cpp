#include "metrics.h"

#include <cstdio>
#include <map>
#include <optional>
#include <vector>

#include "vgpu/host/call_latency.h"
#include "vgpu/host/vm_people.h"

namespace vgpu::daemon {

using host::CallKind;
using host::CallLatency;
using host::kCallKinds;
using host::people_of_tenant;
using host::kLatencyBounds;
using host::LatencyHistogram;
using host::VmPeople;

namespace {

using json = nlohmann::json;

// A label value with \, " and newline escaped, as the format requires.
std::string escaped(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// One metric family: HELP, TYPE, then its samples.
class Family {
 public:
  Family(std::string* out, const char* name, const char* type, const char* help)
      : out_(out), name_(name) {
    *out_ += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  void sample(const std::string& labels, double value) { sample_named(name_, labels, value); }
  // A histogram's series: NAME_bucket, NAME_sum, NAME_count.
  void sample_named(const std::string& series, const std::string& labels, double value) {
    *out_ += series + (labels.empty() ? "" : "{" + labels + "}") + " " + number(value) + "\n";
  }

 private:
  std::string* out_;
  std::string name_;
};

struct Vm {
  std::string labels;  // vm="..",student="..",course=".."
  const json* status = nullptr;
  const json* top = nullptr;
};

// j[key] when it is an array, else an empty one (never a copy: the VMs
// point into it).
const json& array_at(const json& j, const char* key) {
  static const json empty = json::array();
  const auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : empty;
}

uint64_t u64(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<uint64_t>() : 0;
}

std::string labels_of(const std::string& vm, const std::string& student, const std::string& course) {
  return "vm=\"" + escaped(vm) + "\",student=\"" + escaped(student) + "\",course=\"" +
         escaped(course) + "\"";
}

}  // namespace

json latency_view(const CallLatency& latency) {
  json out = json::array();
  for (const auto& [tenant, kinds] : latency.snapshot()) {
    const std::optional<VmPeople> who = people_of_tenant(tenant);
    if (!who) continue;
    for (int k = 0; k < kCallKinds; ++k) {
      const LatencyHistogram& h = kinds[static_cast<size_t>(k)];
      if (h.count == 0) continue;
      out.push_back({{"vm", who->vm}, {"student", who->student}, {"course", who->course},
                     {"kind", call_kind_name(static_cast<CallKind>(k))}, {"counts", h.counts},
                     {"count", h.count}, {"sum_ns", h.sum_ns}});
    }
  }
  return out;
}

std::string prometheus_text(const json& status, const json& top, const json& usage,
                            const json& latency, uint64_t gpu_total_bytes) {
  // Every VM either view names, keyed by name; the student and course come
  // from `top` (connected VMs), else they are empty.
  std::map<std::string, Vm> vms;
  for (const json& t : array_at(top, "tenants")) {
    Vm& vm = vms[t.value("vm", "")];
    vm.top = &t;
  }
  for (const json& t : array_at(status, "tenants")) {
    Vm& vm = vms[t.value("vm", "")];
    vm.status = &t;
  }
  vms.erase("");
  for (auto& [name, vm] : vms) {
    const std::string student = vm.top ? vm.top->value("student", "") : "";
    const std::string course = vm.top ? vm.top->value("course", "") : "";
    vm.labels = labels_of(name, student, course);
  }

  std::string out;
  {
    Family f(&out, "vgpu_vm_gpu_seconds_total", "counter",
             "GPU time a VM has used since vgpud started (its share: the rate of this over the "
             "rate of vgpu_gpu_busy_seconds_total)");
    for (const json& u : array_at(usage, "vms"))
      f.sample(labels_of(u.value("vm", ""), u.value("student", ""), u.value("course", "")),
               static_cast<double>(u64(u, "gpu_ns")) / 1e9);
  }
  {
    Family f(&out, "vgpu_vm_kernels_total", "counter", "Kernels a VM has run since vgpud started");
    for (const json& u : array_at(usage, "vms"))
      f.sample(labels_of(u.value("vm", ""), u.value("student", ""), u.value("course", "")),
               static_cast<double>(u64(u, "kernels")));
  }
  {
    Family f(&out, "vgpu_vm_queue_depth", "gauge", "Commands of a VM waiting to run on the GPU");
    for (const auto& [name, vm] : vms)
      if (vm.status) f.sample(vm.labels, static_cast<double>(u64(*vm.status, "queued")));
  }
  {
    Family f(&out, "vgpu_vm_memory_bytes", "gauge", "Device memory a VM holds");
    for (const auto& [name, vm] : vms)
      if (vm.status) f.sample(vm.labels, static_cast<double>(u64(*vm.status, "bytes")));
  }
  {
    Family f(&out, "vgpu_vm_memory_cap_bytes", "gauge",
             "Device memory a VM may hold (VMs with a cap only)");
    for (const auto& [name, vm] : vms)
      if (vm.top && u64(*vm.top, "memory_cap") > 0)
        f.sample(vm.labels, static_cast<double>(u64(*vm.top, "memory_cap")));
  }
  {
    Family f(&out, "vgpu_vm_budget_remaining_seconds", "gauge",
             "GPU time left in the student's current quota period (limited budgets only)");
    for (const auto& [name, vm] : vms)
      if (vm.top && vm.top->value("limited", false))
        f.sample(vm.labels, static_cast<double>(vm.top->value("left_ns", int64_t{0})) / 1e9);
  }
  {
    Family f(&out, "vgpu_vm_budget_spent", "gauge",
             "1 while the student's budget for this period is spent (limited budgets only)");
    for (const auto& [name, vm] : vms)
      if (vm.top && vm.top->value("limited", false))
        f.sample(vm.labels, vm.top->value("left_ns", int64_t{0}) <= 0 ? 1 : 0);
  }
  {
    Family f(&out, "vgpu_vm_refusals_total", "counter",
             "Requests of a VM vgpud refused, by reason: malformed (broke the wire format), "
             "refused (named what is not its own), work_failed (its GPU work failed), "
             "backpressure (its queue was full)");
    for (const auto& [name, vm] : vms) {
      if (!vm.status) continue;
      for (const char* reason : {"malformed", "refused", "work_failed", "backpressure"})
        f.sample(vm.labels + ",reason=\"" + reason + "\"",
                 static_cast<double>(u64(*vm.status, reason)));
    }
  }
  {
    Family f(&out, "vgpu_vm_channels", "gauge", "Open channels of a VM (its processes)");
    for (const auto& [name, vm] : vms)
      if (vm.status) f.sample(vm.labels, static_cast<double>(u64(*vm.status, "channels")));
  }

  {
    // A histogram: cumulative buckets by upper bound, then the sum and count.
    const char* name = "vgpu_vm_call_duration_seconds";
    Family f(&out, name, "histogram",
             "How long a VM's calls took, from vgpud reading the request to its answer, by kind: "
             "immediate (queries, allocations, module loads) or queued (work the guest waits "
             "for, its turn on the GPU included); asynchronous work is not timed");
    for (const json& l : latency.is_array() ? latency : json::array()) {
      const std::string labels = labels_of(l.value("vm", ""), l.value("student", ""),
                                           l.value("course", "")) +
                                 ",kind=\"" + escaped(l.value("kind", "")) + "\"";
      const json counts = l.value("counts", json::array());
      uint64_t cumulative = 0;
      for (size_t i = 0; i <= kLatencyBounds.size(); ++i) {
        cumulative += i < counts.size() && counts[i].is_number() ? counts[i].get<uint64_t>() : 0;
        char le[16] = "+Inf";  // the bounds as written in call_latency.h, not as doubles print
        if (i < kLatencyBounds.size()) std::snprintf(le, sizeof le, "%g", kLatencyBounds[i]);
        f.sample_named(std::string(name) + "_bucket", labels + ",le=\"" + std::string(le) + "\"",
                       static_cast<double>(cumulative));
      }
      f.sample_named(std::string(name) + "_sum", labels,
                     static_cast<double>(u64(l, "sum_ns")) / 1e9);
      f.sample_named(std::string(name) + "_count", labels, static_cast<double>(u64(l, "count")));
    }
  }

  // The device and the daemon.
  const double busy = static_cast<double>(u64(status, "gpu_ns")) / 1e9;
  const json backend = status.value("backend", json::object());
  const json transport = status.value("transport", json::object());
  Family(&out, "vgpu_gpu_busy_seconds_total", "counter",
         "GPU time every VM has used since vgpud started")
      .sample("", busy);
  Family(&out, "vgpu_gpu_memory_used_bytes", "gauge", "Device memory every VM holds together")
      .sample("", static_cast<double>(u64(backend, "device_bytes")));
  Family(&out, "vgpu_gpu_memory_total_bytes", "gauge", "Device memory shared out among VMs")
      .sample("", static_cast<double>(gpu_total_bytes));
  Family(&out, "vgpu_gpu_contexts", "gauge", "Device contexts open").sample(
      "", static_cast<double>(u64(backend, "contexts")));
  {
    Family f(&out, "vgpu_copy_bytes_total", "counter",
             "Bytes copied between host and device: through vgpud's own staging (path=staged), or "
             "straight from the VM's registered data area (path=direct)");
    f.sample("path=\"staged\"", static_cast<double>(u64(backend, "staged_copy_bytes")));
    f.sample("path=\"direct\"", static_cast<double>(u64(backend, "direct_copy_bytes")));
  }
  // Each GPU of the host (status "gpus"; one with one GPU).
  const json& gpus = array_at(status, "gpus");
  auto per_gpu = [&](const char* name, const char* type, const char* help, const char* key,
                     double scale) {
    Family f(&out, name, type, help);
    for (const json& g : gpus) {
      f.sample("gpu=\"" + std::to_string(u64(g, "index")) + "\"",
               static_cast<double>(u64(g, key)) * scale);
    }
  };
  per_gpu("vgpu_gpu_device_busy_seconds_total", "counter",
          "GPU time the VMs have used on this GPU since vgpud started", "gpu_ns", 1e-9);
  per_gpu("vgpu_gpu_device_memory_used_bytes", "gauge", "Device memory the VMs hold on this GPU",
          "device_bytes", 1);
  per_gpu("vgpu_gpu_device_memory_total_bytes", "gauge", "Device memory of this GPU",
          "memory_total", 1);
  per_gpu("vgpu_gpu_device_vms", "gauge", "VMs with a context on this GPU", "vms", 1);
  {
    Family f(&out, "vgpu_gpu_device_committed_weight", "gauge",
             "Scheduling weight of the VMs placed on this GPU (what placement spread compares)");
    for (const json& g : gpus) {
      f.sample("gpu=\"" + std::to_string(u64(g, "index")) + "\"",
               g.value("committed_weight", 0.0));
    }
  }
  Family(&out, "vgpu_channels", "gauge", "Open channels (processes of every VM)")
      .sample("", static_cast<double>(u64(transport, "channels")));
  Family(&out, "vgpu_requests_total", "counter", "Requests read from every VM")
      .sample("", static_cast<double>(u64(transport, "requests")));
  Family(&out, "vgpu_corrupt_rings_total", "counter",
         "Channels closed because their ring broke the rules")
      .sample("", static_cast<double>(u64(transport, "corrupt_rings")));
  Family(&out, "vgpu_uptime_seconds", "gauge", "Seconds since vgpud started")
      .sample("", status.value("uptime_s", 0.0));
  return out;
}

}  // namespace vgpu::daemon
