// What the program registered before main: its fat binaries, kernels and
// device variables. Kept until the first real call connects; each module is
// uploaded to the host the first time one of its kernels or variables is used.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "connection.h"
#include "vgpu/fatbin/fatbin.h"

namespace vgpu::intercept {

struct ModuleRec {
  std::span<const uint8_t> image;  // the fat binary, in the program's memory
  bool located = false;
  bool parsed = false;
  fatbin::Module info;            // parsed locally, to pack kernel arguments
  uint64_t host_module = 0;       // 0 until uploaded
  Status status = Status::kSuccess;  // a failure to parse or upload, remembered
};

struct KernelRec {
  ModuleRec* module = nullptr;
  std::string name;  // mangled device name
  const fatbin::Kernel* layout = nullptr;
  uint64_t host_function = 0;  // 0 until resolved
  Status status = Status::kSuccess;
};

struct VarRec {
  ModuleRec* module = nullptr;
  std::string name;
  uint64_t size = 0;
  bool constant = false;
  uint64_t dptr = 0;  // 0 until resolved
  Status status = Status::kSuccess;
};

class Registry {
 public:
  static Registry& instance();

  ModuleRec* add_module(const void* wrapper);
  void add_kernel(ModuleRec* module, const void* host_fun, const char* device_name);
  void add_var(ModuleRec* module, const void* host_var, const char* device_name, uint64_t size,
               bool constant);

  KernelRec* kernel_by_host_fun(const void* host_fun) const;
  KernelRec* kernel_by_handle(const void* handle) const;  // a handle from __cudaGetKernel
  VarRec* var_by_host(const void* host_var) const;

  // With the connection lock held: makes the kernel or variable usable on the host.
  Status resolve(Connection& c, KernelRec& k);
  Status resolve(Connection& c, VarRec& v);

 private:
  Status load_module(Connection& c, ModuleRec& m);

  mutable std::shared_mutex mu_;
  std::vector<std::unique_ptr<ModuleRec>> modules_;
  std::vector<std::unique_ptr<KernelRec>> kernel_store_;
  std::vector<std::unique_ptr<VarRec>> var_store_;
  std::unordered_map<const void*, KernelRec*> kernels_;  // by host stub address
  std::unordered_set<const void*> kernel_handles_;
  std::unordered_map<const void*, VarRec*> vars_;        // by host shadow address
};

}  // namespace vgpu::intercept
