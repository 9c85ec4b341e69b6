// Backend::stats() for both backends: what each tenant holds, read from the
// backend's own tables (each context under its lock) and its memory ledger.
// The two backends' Context types differ but share the fields read here.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "common/tenant_ledger.h"
#include "vgpu/executor/backend.h"

namespace vgpu::executor::common {

// `contexts`: shared pointers to the backend's live contexts (copied out of
// its table, so the table's lock is not held while each context is read).
template <class Context>
BackendStats collect_stats(const std::vector<std::shared_ptr<Context>>& contexts,
                           const TenantLedger& ledger) {
  std::map<TenantId, TenantHoldings> by_tenant;
  for (const auto& ctx : contexts) {
    TenantHoldings& h = by_tenant[ctx->tenant];
    std::lock_guard<std::mutex> lock(ctx->mu);
    h.contexts++;
    h.allocations += ctx->allocations.count();
    h.streams += ctx->streams.size();
    h.events += ctx->events.size();
    h.modules += ctx->modules.size();
    h.pending += ctx->default_stream.pending;
    for (const auto& [handle, stream] : ctx->streams) h.pending += stream.pending;
  }
  // Bytes come from the ledger, so a charge that outlived its context shows.
  for (const auto& [tenant, memory] : ledger.all()) {
    if (memory.used > 0) by_tenant[tenant].bytes = memory.used;
  }
  BackendStats out;
  out.contexts = contexts.size();
  out.device_bytes = ledger.device_used();
  for (auto& [tenant, h] : by_tenant) {
    h.tenant = tenant;
    out.tenants.push_back(h);
  }
  return out;
}

}  // namespace vgpu::executor::common
