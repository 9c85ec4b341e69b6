// A grid's CTAs on several host threads. Each thread runs whole CTAs, taken in the grid's order
// from one counter, with its own shared and local memory; the launch's symbols and parameters
// are copied from the context the launch was set up in. CTAs starting in order keeps the
// guarantee code such as CUB's decoupled look-back relies on: a CTA waiting for an earlier
// CTA's flag waits for one that has started, and finishes.
#include <atomic>
#include <mutex>
#include <system_error>
#include <thread>

#include "ptx_exec.h"

namespace vgpu::executor::sim::ptx {
namespace {

// The environment's functions that keep state (the printf FIFO, the device heap), called one
// at a time; the lookups and the texture unit only read tables a run does not change, and the
// memory the kernel addresses, so CTAs on several threads sample textures at once (Environment).
Environment serialized(const Environment& env, std::mutex& mu) {
  Environment out = env;
  auto wrap = [&mu](const auto& f) {
    using F = std::decay_t<decltype(f)>;
    if (!f) return F();
    return F([&mu, &f](auto&&... args) {
      std::lock_guard lock(mu);
      return f(std::forward<decltype(args)>(args)...);
    });
  };
  out.print = wrap(env.print);
  out.heap_alloc = wrap(env.heap_alloc);
  out.heap_free = wrap(env.heap_free);
  return out;
}

// A context for one host thread: the launch's layout shared, its CTA memory its own.
Context thread_context(const Context& c, const Environment* env) {
  Context w;
  w.p = c.p;
  w.launch = c.launch;
  w.env = env;
  w.entry = c.entry;
  w.children = c.children;  // locked where it is used
  w.sym_value = c.sym_value;  // addresses into c's copies, which outlive the run
  w.params = c.params;
  w.shared_size = c.shared_size;
  w.dynamic_shared_offset = c.dynamic_shared_offset;
  w.shared_mem.assign(c.shared_mem.size(), 0);
  w.local_per_thread = c.local_per_thread;
  w.local_mem.assign(c.local_mem.size(), 0);
  w.threads_per_cta = c.threads_per_cta;
  return w;
}

}  // namespace

Result run_ctas_in_parallel(const Context& c, uint32_t entry, unsigned workers) {
  const Launch& launch = *c.launch;
  const uint64_t gx = launch.grid[0], gy = launch.grid[1];
  const uint64_t count = gx * gy * launch.grid[2];
  std::mutex env_mutex;
  const Environment env = serialized(*c.env, env_mutex);
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex result_mutex;
  uint64_t failed_cta = UINT64_MAX;
  Result result;

  auto work = [&] {
    Context w = thread_context(c, &env);
    std::vector<Thread> threads(c.threads_per_cta);
    while (!failed.load(std::memory_order_relaxed)) {
      const uint64_t i = next.fetch_add(1);
      if (i >= count) return;
      w.ctaid[0] = (uint32_t)(i % gx);
      w.ctaid[1] = (uint32_t)(i / gx % gy);
      w.ctaid[2] = (uint32_t)(i / (gx * gy));
      if (w.shared_size) std::fill(w.shared_mem.begin(), w.shared_mem.end(), 0);
      start_cta(w, entry, threads, w.local_mem.data());
      if (run_cta(w, threads) == CtaRun::kFailed) {
        std::lock_guard lock(result_mutex);
        if (i < failed_cta) {
          failed_cta = i;
          result = w.result;
        }
        failed.store(true);
        return;
      }
    }
  };

  std::vector<std::thread> helpers;
  for (unsigned k = 1; k < workers; ++k) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: the ones running do the grid
    }
  }
  work();
  for (std::thread& t : helpers) t.join();
  return result;
}

}  // namespace vgpu::executor::sim::ptx
