// GPU utilization as a VM sees it: the share of time its own tenant's work
// had the GPU (the device time vgpud charged it), over the last sample
// period, as NVIDIA's "percent of time during which a kernel was executing".
// The card's own figure would tell one VM about the others' load.
//
// Each call compares the tenant's charged time and the host's clock now with
// the previous call's, over at least 100 ms (NVIDIA samples every 1/6 to
// 1 s): a call sooner than that after the last waits out the rest, and a
// call with no previous one in the last second takes a sample and waits the
// whole 100 ms, so every answer measures something.
//
// Memory utilization (time device memory was being read or written) is not
// measured by vgpud: it is reported as 0.
#include <chrono>
#include <mutex>
#include <thread>

#include "connection.h"
#include "nvml_api.h"
#include "nvml_state.h"

using vgpu::Status;
using vgpu::nvml::check_device;
using vgpu::nvml::to_nvml;

namespace {

struct Sample {
  uint64_t gpu_ns = 0;
  uint64_t now_ns = 0;
};

constexpr uint64_t kPeriodNs = 1'000'000'000;
constexpr uint64_t kWindowNs = 100'000'000;  // the shortest period an answer covers

nvmlReturn_t sample(Sample* out) {
  using vgpu::intercept::Connection;
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  vgpu::proto::TenantUsageReply rep{};
  if (Status s = c.call(vgpu::proto::TenantUsageRequest{}, {}, &rep); !ok(s)) return to_nvml(s);
  *out = {rep.gpu_ns, rep.now_ns};
  return NVML_SUCCESS;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) noexcept {
  if (nvmlReturn_t r = check_device(device); r != NVML_SUCCESS) return r;
  if (!utilization) return NVML_ERROR_INVALID_ARGUMENT;
  static std::mutex mu;
  static Sample previous;
  std::lock_guard lock(mu);
  Sample now;
  if (nvmlReturn_t r = sample(&now); r != NVML_SUCCESS) return r;
  if (previous.now_ns == 0 || now.now_ns - previous.now_ns > kPeriodNs) previous = now;
  if (const uint64_t waited = now.now_ns - previous.now_ns; waited < kWindowNs) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(kWindowNs - waited));
    if (nvmlReturn_t r = sample(&now); r != NVML_SUCCESS) return r;
  }
  const uint64_t wall = now.now_ns - previous.now_ns;
  const uint64_t gpu = now.gpu_ns >= previous.gpu_ns ? now.gpu_ns - previous.gpu_ns : 0;
  const uint64_t percent = wall ? (gpu * 100 + wall / 2) / wall : 0;
  utilization->gpu = static_cast<unsigned>(percent > 100 ? 100 : percent);
  utilization->memory = 0;
  previous = now;
  return NVML_SUCCESS;
}

}  // extern "C"
