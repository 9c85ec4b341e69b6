// A backend's live contexts by id, shared by the sim and cuda backends. Ids
// are never reused, and unique across every backend of the process (a host
// with several GPUs has a backend each, and the set of them routes a call
// by its context: host/gpu_set.h); each context gets a seed for its random handles from the
// system's random source, so one tenant cannot predict another's handles.
// Thread-safe: lookups share a lock, changes take it alone. A context found
// stays alive while its caller holds it, even if it is taken out meanwhile.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "vgpu/executor/backend.h"

namespace vgpu::executor::common {

// The next context id of any backend in this process.
inline std::atomic<ContextId> g_next_context_id{1};

template <class Ctx>
class ContextRegistry {
 public:
  // An id no context has had.
  ContextId next_id() { return g_next_context_id.fetch_add(1); }
  // A seed for a new context's handles.
  uint64_t seed() {
    std::unique_lock<std::shared_mutex> lock(mu_);
    return (uint64_t{seed_source_()} << 32) ^ seed_source_();
  }
  void add(ContextId id, std::shared_ptr<Ctx> ctx) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    contexts_.emplace(id, std::move(ctx));
  }
  std::shared_ptr<Ctx> find(ContextId id) const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = contexts_.find(id);
    return it == contexts_.end() ? nullptr : it->second;
  }
  // Removes the context; nullptr if there was none.
  std::shared_ptr<Ctx> take(ContextId id) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    auto it = contexts_.find(id);
    if (it == contexts_.end()) return nullptr;
    std::shared_ptr<Ctx> ctx = std::move(it->second);
    contexts_.erase(it);
    return ctx;
  }
  // Every context (for statistics), or every one removed (at shutdown).
  std::vector<std::shared_ptr<Ctx>> all() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return list();
  }
  std::vector<std::shared_ptr<Ctx>> take_all() {
    std::unique_lock<std::shared_mutex> lock(mu_);
    auto out = list();
    contexts_.clear();
    return out;
  }

 private:
  std::vector<std::shared_ptr<Ctx>> list() const {
    std::vector<std::shared_ptr<Ctx>> out;
    out.reserve(contexts_.size());
    for (const auto& [id, ctx] : contexts_) out.push_back(ctx);
    return out;
  }

  mutable std::shared_mutex mu_;
  std::random_device seed_source_;  // guarded by mu_ (exclusive)
  std::unordered_map<ContextId, std::shared_ptr<Ctx>> contexts_;  // guarded by mu_
};

}  // namespace vgpu::executor::common
