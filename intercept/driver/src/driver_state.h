// What the guest driver keeps for a process: the device's unchanging
// properties (fetched in one round trip), contexts, modules, functions and
// library handles. Work, memory and objects live on the host; these are the
// guest's handles for them. See docs/compatibility.md for what is forwarded.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "connection.h"
#include "vgpu/fatbin/fatbin.h"

namespace vgpu::driver {

using intercept::Connection;

// The CUresult for a status of the wire (their codes agree but for a few).
CUresult to_cu(Status s);

// The one device a VM sees, as the host describes it. Asked once, then
// answered in the guest: none of it changes while the process runs.
struct DeviceInfo {
  int count = 0;
  char name[256] = {};
  CUuuid uuid = {};
  uint64_t total_mem = 0;
  int32_t attributes[160] = {};
  int attribute(int a) const { return a >= 0 && a < 160 ? attributes[a] : 0; }
};
// Fetches the device's description on first use. CUDA_ERROR_NO_DEVICE (with
// one log line) when vgpud cannot be reached.
CUresult device_info(const DeviceInfo** out);
CUresult check_device(CUdevice d);

// The driver version this library implements (cuda.h's CUDA_VERSION): what
// cuDriverGetVersion reports and what the runtime's integrity check hashes.
inline constexpr int kDriverVersion = CUDA_VERSION;

// Whether cuInit has run (every other call but a few needs it).
bool initialized();

// ---- contexts ---------------------------------------------------------------
// Every context of a process shares its one session on the host (its device
// memory, streams, modules): a VM has one virtual GPU. Contexts here carry
// what the API lets a program observe: flags, limits, context-local storage;
// which created context made which object is kept in context_objects.h.
struct Context {
  CUdevice device = 0;
  unsigned flags = 0;
  bool primary = false;
  int retains = 0;  // primary context: cuDevicePrimaryCtxRetain count
  unsigned long long id = 0;
  struct Stored {
    void* value;
    void (*destructor)(CUcontext, void*, void*);
  };
  std::map<void*, Stored> storage;  // context-local storage (a private table)
  size_t limits[16] = {};
};
std::mutex& context_mutex();
// Context-local storage changed somewhere (a put, a delete, a context reset or
// destroyed): answers kept from before are stale. Called with context_mutex held.
void storage_changed();
uint64_t storage_generation();
Context* primary_context(CUdevice d);
Context* current_context();                   // the calling thread's, or null
Context* as_context(CUcontext ctx);           // null unless a live context
// The context a call made with `ctx` (null: current) means; null if none.
Context* resolve_context(CUcontext ctx);
// What calls that work in the current context check first: cuInit ran
// (CUDA_ERROR_NOT_INITIALIZED) and a context is current (CUDA_ERROR_INVALID_CONTEXT).
CUresult need_context();

// ---- modules and functions ---------------------------------------------------
struct Module;
struct Function {
  Module* module = nullptr;
  std::string name;
  const fatbin::Kernel* layout = nullptr;
  uint64_t host_function = 0;  // 0 until resolved on the host
  int max_dynamic_shared = 0;  // cuFuncSetAttribute
  bool prints = false;         // its module calls device printf
  // Thread block clusters: the shape the kernel requires (its
  // __cluster_dims__, or cuFuncSetAttribute's REQUIRED_CLUSTER_*; 0s: none)
  // and whether it may have more than 8 blocks.
  unsigned required_cluster[3] = {0, 0, 0};
  bool non_portable_cluster = false;
};

// Packs a launch's arguments (kernelParams, or extra's buffer) as the
// kernel's metadata lays them out; *f is the function behind the handle (a
// CUfunction or a CUkernel: the same here).
CUresult pack_arguments(CUfunction fn, void** params, void** extra, Function** f,
                        std::vector<uint8_t>* out);

struct Module {
  std::vector<uint8_t> image;        // a fat binary (what the host loads)
  fatbin::Module info;               // parsed here, to pack kernel arguments
  bool parsed = false;
  uint64_t host_module = 0;          // 0 until uploaded
  CUresult load_status = CUDA_SUCCESS;  // a failure to parse or upload, remembered
  std::map<std::string, std::unique_ptr<Function>> functions;
  std::map<std::string, std::pair<uint64_t, uint64_t>> globals;  // name -> (dptr, size)
};

// The process's modules and functions, by the handles the program holds.
class Objects {
 public:
  static Objects& instance();
  std::mutex& mutex() { return mu_; }

  // Takes an image (a fat binary, a cubin or PTX, already wrapped as a fat
  // binary) and returns its handle; nothing is sent to the host yet.
  Module* add_module(std::vector<uint8_t> fatbin);
  void remove_module(Module* m);
  Module* module(void* handle) const;
  Function* function(void* handle) const;
  // Grows each time handles die (a module unloaded): a handle checked at one
  // generation is still live while the generation has not moved.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

  // With both locks held (objects, then connection): parses and uploads the
  // module on first use, resolves a function by name.
  CUresult load(Connection& c, Module& m);
  CUresult get_function(Connection& c, Module& m, const std::string& name, Function** out);
  CUresult get_global(Connection& c, Module& m, const std::string& name, uint64_t* dptr,
                      uint64_t* size);

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<Module>> modules_;
  std::unordered_set<const void*> module_handles_;
  std::unordered_set<const void*> function_handles_;
  std::atomic<uint64_t> generation_{0};
};

// Every function of a module or library (the handle a program holds),
// resolved on the host: what cuFFT asks for through a private table.
CUresult module_functions(void* module, std::vector<Function*>* out);

// Turns what cuModuleLoadData / cuLibraryLoadData were given (a registration
// wrapper, a fat binary, a cubin, or PTX text) into fat binary bytes the host
// parses. CUDA_ERROR_INVALID_IMAGE for anything else.
CUresult image_to_fatbin(const void* image, std::vector<uint8_t>* out);

// The PTX NVRTC compiled `cubin` from, if this process got that cubin from
// nvrtcGetCUBIN (nvrtc_companion.cpp); empty otherwise.
std::string jit_ptx_for(const uint8_t* cubin, size_t size);

// ---- streams ------------------------------------------------------------------
// The host's handle for a stream; the legacy and per-thread default streams
// are the host's default stream.
inline uint64_t stream_handle(CUstream s) {
  if (s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) return 0;
  return reinterpret_cast<uint64_t>(s);
}

// ---- host memory --------------------------------------------------------------
// Page-locked host memory the program allocated or registered: the pinned
// blocks of the data area and what did not fit there.
struct HostRange {
  uint64_t size = 0;
  unsigned flags = 0;
  bool allocated = false;  // cuMemHostAlloc (else cuMemHostRegister)
  bool mapped = false;     // with DEVICEMAP: managed memory underneath (host_memory.cpp)
  uint64_t device = 0;     // registered with DEVICEMAP: the device address of its base
};
bool host_range(const void* p, const void** base, HostRange* out);
// On a GPU with unified addressing a kernel reaches all page-locked memory at
// its host pointer (zero-copy). Here pinned memory made without DEVICEMAP
// lives in the data area, and registered memory is mirrored at another
// device address (cuMemHostGetDevicePointer), so a kernel given the host
// pointer would fault. This rewrites each 8-byte word of a kernel's packed
// parameters that points into such memory to its device address, mirroring
// the memory first if it is not yet (kept coherent at launches and
// synchronisations from then on). Pointers the kernel finds in memory are
// not rewritten. Costs one relaxed load while the program holds no such memory.
CUresult map_host_pointers(uint8_t* params, size_t size, const char* kernel);

// Logs `what` once and returns CUDA_ERROR_NOT_SUPPORTED: a call (or a mode of
// one) vgpu refuses by name.
CUresult refuse(const char* what);

}  // namespace vgpu::driver
