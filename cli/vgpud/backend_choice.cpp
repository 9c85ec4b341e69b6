#include "backend_choice.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace vgpu::daemon {

Status choose_backend(const std::string& choice, const executor::SimConfig& sim,
                      const executor::CudaConfig& cuda, std::unique_ptr<executor::Backend>* out,
                      std::string* why) {
  if (choice == "sim") return executor::make_sim_backend(sim, out);
  if (choice == "cuda" || choice == "auto") {
    // The probe runs in a worker process: the daemon itself never loads the
    // driver, so a machine without one (CI) starts it all the same.
    std::string reason;
    const Status st = executor::make_cuda_backend(cuda, out, &reason);
    if (ok(st)) return st;
    if (choice == "cuda") {
      *why = "--backend cuda: " + reason;
      return st;
    }
    spdlog::info("vgpud: --backend auto: the GPU cannot be used ({}); using the sim backend",
                 reason);
    return executor::make_sim_backend(sim, out);
  }
  *why = "--backend must be sim, cuda or auto, not '" + choice + "'";
  return Status::kInvalidValue;
}

Result parse_cuda_devices(const std::vector<std::string>& values, std::vector<int>* ordinals) {
  std::vector<int> out;
  for (const std::string& v : values) {
    if (v == "all") {
      if (values.size() != 1) return Result::invalid_argument("--cuda-device all stands alone");
      continue;
    }
    size_t end = 0;
    int n = -1;
    try {
      n = std::stoi(v, &end);
    } catch (const std::exception&) {
      end = 0;
    }
    if (end != v.size() || n < 0 || n > 255) {
      return Result::invalid_argument("--cuda-device '" + v + "' is not a GPU ordinal or all");
    }
    if (std::find(out.begin(), out.end(), n) != out.end()) {
      return Result::invalid_argument("--cuda-device " + v + " is given twice");
    }
    out.push_back(n);
  }
  *ordinals = std::move(out);
  return {};
}

namespace {

// The GPUs after the first on the cuda backend: the ordinals named, or
// (none named) 1, 2, ... until the driver has no such device.
Status more_cuda_gpus(const executor::CudaConfig& cuda, const std::vector<int>& cuda_devices,
                      std::vector<std::unique_ptr<executor::Backend>>* out, std::string* why) {
  const bool all = cuda_devices.empty();
  for (int i = 1; all || static_cast<size_t>(i) < cuda_devices.size(); ++i) {
    executor::CudaConfig c = cuda;
    c.device = all ? i : cuda_devices[static_cast<size_t>(i)];
    std::unique_ptr<executor::Backend> next;
    std::string reason;
    const Status st = executor::make_cuda_backend(c, &next, &reason);
    if (all && (st == Status::kInvalidDevice || st == Status::kNoDevice)) break;  // the last one
    if (!ok(st)) {
      *why = "--cuda-device " + std::to_string(c.device) + ": " + reason;
      return st;
    }
    out->push_back(std::move(next));
  }
  return Status::kSuccess;
}

}  // namespace

Status choose_gpus(const std::string& choice, const executor::SimConfig& sim,
                   const std::vector<uint64_t>& sim_memory_gib, const executor::CudaConfig& cuda,
                   const std::vector<int>& cuda_devices,
                   std::vector<std::unique_ptr<executor::Backend>>* out, std::string* why) {
  if (choice == "sim" && cuda_devices.size() != 1) {
    *why = "--cuda-device names the GPUs of the cuda backend, not of sim (--sim-devices)";
    return Status::kInvalidValue;
  }
  std::unique_ptr<executor::Backend> first;
  executor::SimConfig one = sim;
  one.device_memory = sim_memory_gib.at(0) * executor::kGiB;
  executor::CudaConfig first_cuda = cuda;
  first_cuda.device = cuda_devices.empty() ? 0 : cuda_devices[0];
  if (const Status st = choose_backend(choice, one, first_cuda, &first, why); !ok(st)) return st;
  const bool is_sim = first->name() == "sim";
  out->push_back(std::move(first));
  if (!is_sim) {
    if (sim_memory_gib.size() > 1) {
      *why = "--sim-devices and a list of --sim-memory-gib apply to the sim backend only";
      out->clear();
      return Status::kInvalidValue;
    }
    if (const Status st = more_cuda_gpus(first_cuda, cuda_devices, out, why); !ok(st)) {
      out->clear();
      return st;
    }
    return Status::kSuccess;
  }
  if (sim_memory_gib.size() == 1) return Status::kSuccess;
  for (size_t i = 1; i < sim_memory_gib.size(); ++i) {
    one.device_memory = sim_memory_gib[i] * executor::kGiB;
    one.device_index = static_cast<uint32_t>(i);
    std::unique_ptr<executor::Backend> next;
    if (const Status st = executor::make_sim_backend(one, &next); !ok(st)) {
      *why = "sim GPU " + std::to_string(i) + " cannot start (see above)";
      out->clear();
      return st;
    }
    out->push_back(std::move(next));
  }
  return Status::kSuccess;
}

}  // namespace vgpu::daemon
