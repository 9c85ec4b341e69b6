// A Backend for tests of what sits above one (dispatcher, scheduler control):
// every call succeeds and keeps nothing. A test derives from it and overrides
// only what it records: execute, discard, execute_batch.
#pragma once

#include "vgpu/executor/backend.h"

namespace vgpu::test {

class QuietBackend : public executor::Backend {
 public:
  explicit QuietBackend(std::string_view name = "quiet") : name_(name) {}

  std::string_view name() const override { return name_; }
  const executor::DeviceInfo& device() const override { return info_; }
  Status create_context(executor::TenantId, executor::ContextId*) override { return Status::kSuccess; }
  void destroy_context(executor::ContextId) override {}
  void set_memory_cap(executor::TenantId, uint64_t) override {}
  executor::TenantMemory tenant_memory(executor::TenantId) const override { return {}; }
  uint64_t context_bytes(executor::ContextId) const override { return 0; }
  Status mem_alloc(executor::ContextId, uint64_t, uint64_t*) override { return Status::kSuccess; }
  Status mem_info(executor::ContextId, uint64_t*, uint64_t*) override { return Status::kSuccess; }
  Status texture_create(executor::ContextId, const executor::TextureDesc&, executor::Handle*) override {
    return Status::kNotSupported;
  }
  Status take_device_output(executor::ContextId, int, std::span<uint8_t>, uint64_t* bytes,
                            uint64_t* dropped) override {
    *bytes = *dropped = 0;
    return Status::kSuccess;
  }
  Status stream_create(executor::ContextId, uint32_t, int32_t, executor::Handle*) override { return Status::kSuccess; }
  Status stream_query(executor::ContextId, executor::Handle) override { return Status::kSuccess; }
  Status event_create(executor::ContextId, uint32_t, executor::Handle*) override { return Status::kSuccess; }
  Status event_query(executor::ContextId, executor::Handle) override { return Status::kSuccess; }
  Status event_elapsed(executor::ContextId, executor::Handle, executor::Handle, int64_t*) override { return Status::kSuccess; }
  Status module_load(executor::ContextId, std::span<const uint8_t>, executor::Handle*) override { return Status::kSuccess; }
  Status function_get(executor::ContextId, executor::Handle, std::string_view, executor::Handle*, executor::FunctionInfo*) override { return Status::kSuccess; }
  Status var_get(executor::ContextId, executor::Handle, std::string_view, uint64_t, uint64_t*) override { return Status::kSuccess; }
  Status func_attributes(executor::ContextId, executor::Handle, executor::FunctionAttributes*) override { return Status::kSuccess; }
  Status accept(const executor::Work&) override { return Status::kSuccess; }
  executor::ExecResult execute(const executor::Work&) override { return {}; }
  void discard(const executor::Work&) override {}

 private:
  std::string_view name_;
  executor::DeviceInfo info_;
};

}  // namespace vgpu::test
