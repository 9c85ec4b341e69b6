// The policy store: tenants (VMs) and the usage ledger, kept in SQLite on
// disk. An interface, so a shared database server can hold a whole cluster's
// ledger later; SQLite is the embedded default.
//
// Thread-safe: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "vgpu/protocol/status.h"

namespace vgpu::policy {

using TenantId = uint32_t;

// Usage of one tenant over one interval, as the daemon charged it.
struct UsageRecord {
  TenantId tenant = 0;
  int64_t interval_start = 0;  // unix seconds, start of the hour the usage falls in
  uint64_t gpu_ns = 0;
  uint64_t kernels = 0;
  uint64_t bytes_to_device = 0;
  uint64_t bytes_from_device = 0;
  uint64_t peak_memory = 0;  // max over the interval
};

struct VmRow {
  TenantId tenant = 0;
  std::string name;
  int64_t first_seen = 0;
  int64_t last_seen = 0;
};

class Store {
 public:
  virtual ~Store() = default;
  // The tenant a VM name maps to, created on first sight.
  virtual Status tenant_for_vm(const std::string& vm, TenantId* out) = 0;
  virtual Status list_vms(std::vector<VmRow>* out) = 0;
  // Adds a batch of usage in one transaction (sums per tenant and interval).
  virtual Status record_usage(std::span<const UsageRecord> batch) = 0;
  // Usage summed per tenant over [since, until) (unix seconds).
  virtual Status usage_between(int64_t since, int64_t until, std::vector<UsageRecord>* out) = 0;
  virtual int schema_version() = 0;
};

// Opens (creating if needed) the database at `path` and migrates it to the
// current schema. On failure `why` says what went wrong.
Status open_sqlite_store(const std::string& path, std::unique_ptr<Store>* out, std::string* why);

}  // namespace vgpu::policy
