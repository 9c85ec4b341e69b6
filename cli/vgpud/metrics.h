// vgpud's metrics in Prometheus's text exposition format (version 0.0.4),
// made from the two views the admin socket already serves, `status` (what
// each VM holds and did wrong, the transport, the device) and `top` (each
// connected VM's student, course, queue and budget), and `usage`: the GPU
// time and kernels of every VM admitted since vgpud started, gone ones too,
// so a program that ran between two scrapes is still counted. Names follow
// Prometheus's conventions: a `vgpu_` prefix, base units (seconds, bytes),
// `_total` on counters. See docs/quotas.md ("Metrics") for the list.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace vgpu::host {
class CallLatency;
}

namespace vgpu::daemon {

// `status`: daemon_status(); `top`: QuotaControl::top() for an admin;
// `usage`: [{vm, student, course, gpu_ns, kernels}]; `latency`: [{vm,
// student, course, kind, counts, count, sum_ns}], `counts` per bucket of
// kLatencyBounds (call_latency.h) and +Inf, not cumulative;
// `gpu_total_bytes`: the device's memory.
// The `latency` view of every VM admitted since vgpud started (vm_people.h
// names them).
nlohmann::json latency_view(const host::CallLatency& latency);

std::string prometheus_text(const nlohmann::json& status, const nlohmann::json& top,
                            const nlohmann::json& usage, const nlohmann::json& latency,
                            uint64_t gpu_total_bytes);

}  // namespace vgpu::daemon
