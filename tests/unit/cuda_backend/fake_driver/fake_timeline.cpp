// FAKE CUDA DRIVER, for tests only: its modeled GPU (see fake_cuda.h).
#include "fake_timeline.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>

namespace vgpu::test::fake_cuda {

// The device file holds a SharedDevice as it is in memory, read and updated
// by several processes at once: only lock-free atomics work there.
static_assert(std::is_standard_layout_v<SharedDevice>);
static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(sizeof(std::atomic<uint64_t>) == sizeof(uint64_t));

namespace {

SharedDevice local_device;                         // without a device file
std::atomic<SharedDevice*> current{&local_device};
std::mutex map_mu;                                 // over mapped
SharedDevice* mapped = nullptr;

void zero(SharedDevice& d) {
  for (std::atomic<uint64_t>* a : {&d.compute_until, &d.copy_until, &d.kernel_busy_ns, &d.copy_busy_ns,
                                   &d.kernels, &d.copies, &d.first_start_ns, &d.last_end_ns}) {
    a->store(0);
  }
}

// Maps the device file, creating it if need be. Zero-filled means fresh, so
// the one that creates or extends it (under flock, as others may open it at
// the same moment) writes nothing else, and nobody clobbers another's counts.
SharedDevice* map_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return nullptr;
  ::flock(fd, LOCK_EX);
  struct stat st {};
  const bool sized = ::fstat(fd, &st) == 0 &&
                     (st.st_size >= static_cast<off_t>(sizeof(SharedDevice)) ||
                      ::ftruncate(fd, sizeof(SharedDevice)) == 0);
  void* p = sized ? ::mmap(nullptr, sizeof(SharedDevice), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  ::flock(fd, LOCK_UN);
  ::close(fd);
  return p == MAP_FAILED ? nullptr : static_cast<SharedDevice*>(p);
}

void lower_to(std::atomic<uint64_t>& a, uint64_t v) {  // 0 is "not set yet"
  uint64_t seen = a.load();
  while ((seen == 0 || v < seen) && !a.compare_exchange_weak(seen, v)) {
  }
}

void raise_to(std::atomic<uint64_t>& a, uint64_t v) {
  uint64_t seen = a.load();
  while (v > seen && !a.compare_exchange_weak(seen, v)) {
  }
}

// Whether k's first parameter is an 8-byte unsigned integer. Only a mangled
// name says signedness (_Z4worky: y is unsigned long long, m unsigned long);
// an extern "C" name, or one this short reading cannot follow, goes by size.
bool first_param_u64(const fatbin::Kernel& k) {
  if (k.params.empty() || k.params[0].size != 8) return false;
  const std::string& n = k.name;
  if (n.rfind("_Z", 0) != 0) return true;
  size_t i = 2;
  const bool nested = i < n.size() && n[i] == 'N';  // _ZN3lab4workEy
  if (nested) ++i;
  do {
    if (i >= n.size() || n[i] < '0' || n[i] > '9') return true;
    size_t len = 0;
    while (i < n.size() && n[i] >= '0' && n[i] <= '9' && len <= n.size()) len = len * 10 + static_cast<size_t>(n[i++] - '0');
    i += len;
  } while (nested && i < n.size() && n[i] != 'E');
  if (nested) ++i;
  if (i >= n.size() || n[i] == 'I') return true;  // templates: by size
  return n[i] == 'y' || n[i] == 'm';
}

}  // namespace

SharedDevice* shared_device() { return current.load(); }

namespace timeline {

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

void knobs_from_env(Knobs* k) {
  auto get = [](const char* name) -> const char* {
    const char* v = std::getenv(name);
    return v && *v ? v : nullptr;
  };
  auto num = [&](const char* name) {
    const char* v = get(name);
    return v ? std::strtoull(v, nullptr, 10) : 0ull;
  };
  k->kernel_ns = num("VGPU_FAKE_CUDA_KERNEL_NS");
  k->block_ns = num("VGPU_FAKE_CUDA_BLOCK_NS");
  k->copy_ns = num("VGPU_FAKE_CUDA_COPY_NS");
  const char* gbps = get("VGPU_FAKE_CUDA_COPY_GBPS");
  k->copy_bytes_per_ns = gbps ? std::strtod(gbps, nullptr) : 0;
  const char* file = get("VGPU_FAKE_CUDA_DEVICE_FILE");
  k->device_file = file ? file : "";
}

void reset(const Knobs& knobs) {
  std::lock_guard<std::mutex> lock(map_mu);
  // Mapped afresh each time: a test may have removed and made the file again.
  if (mapped) ::munmap(mapped, sizeof(SharedDevice));
  mapped = knobs.device_file.empty() ? nullptr : map_file(knobs.device_file);
  if (!knobs.device_file.empty() && !mapped) {
    std::fprintf(stderr, "fake cuda: cannot map %s (%s); the device is this process's own\n",
                 knobs.device_file.c_str(), std::strerror(errno));
  }
  zero(local_device);
  current = mapped ? mapped : &local_device;
}

uint64_t issue(Engine engine, uint64_t* stream_until, uint64_t cost_ns) {
  SharedDevice& d = *current.load();
  const bool compute = engine == Engine::kCompute;
  std::atomic<uint64_t>& until = compute ? d.compute_until : d.copy_until;
  const uint64_t now = now_ns();
  uint64_t seen = until.load();
  uint64_t start = 0;
  do {
    start = std::max({now, *stream_until, seen});
  } while (!until.compare_exchange_weak(seen, start + cost_ns));
  const uint64_t end = start + cost_ns;
  *stream_until = end;
  (compute ? d.kernels : d.copies).fetch_add(1);
  if (cost_ns > 0) {  // work of no modeled time neither opens nor stretches the busy window
    (compute ? d.kernel_busy_ns : d.copy_busy_ns).fetch_add(cost_ns);
    lower_to(d.first_start_ns, start);
    raise_to(d.last_end_ns, end);
  }
  return end;
}

void wait_until(uint64_t ns) {
  constexpr uint64_t kSpin = 100'000;
  for (uint64_t now = now_ns(); now < ns; now = now_ns()) {
    if (ns - now > kSpin) std::this_thread::sleep_for(std::chrono::nanoseconds(ns - now - kSpin));
    else std::this_thread::yield();
  }
}

uint64_t kernel_cost(const Knobs& knobs, const fatbin::Kernel& k, const std::vector<uint8_t>& params,
                     uint64_t blocks) {
  if (k.name.find("work") != std::string::npos && first_param_u64(k) &&
      params.size() >= uint64_t{k.params[0].offset} + 8) {
    uint64_t ns = 0;
    std::memcpy(&ns, params.data() + k.params[0].offset, 8);
    return ns;
  }
  return knobs.kernel_ns + blocks * knobs.block_ns;
}

uint64_t copy_cost(const Knobs& knobs, size_t bytes) {
  if (knobs.copy_bytes_per_ns <= 0) return knobs.copy_ns;
  return knobs.copy_ns + static_cast<uint64_t>(std::llround(static_cast<double>(bytes) / knobs.copy_bytes_per_ns));
}

}  // namespace timeline
}  // namespace vgpu::test::fake_cuda
