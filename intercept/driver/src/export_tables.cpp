// cuGetExportTable: the driver's private tables, asked for by UUID by
// NVIDIA's runtime and libraries. What each slot does was probed on this kind
// of machine (docs/compatibility.md, "Private tables") with ZLUDA's dark_api
// notes as a guide. Slot 0 is the table's size in bytes; a slot nobody has
// been seen to call logs its table and number and refuses, so a new use shows
// up by name instead of as a crash. Unknown tables are refused.
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "driver_state.h"
#include "integrity_check.h"
#include "log.h"

using namespace vgpu;
using namespace vgpu::driver;

namespace {

template <int Table, int Slot>
CUresult unknown_slot() {
  char what[96];
  std::snprintf(what, sizeof what, "slot %d of the driver's private table #%d", Slot, Table);
  return refuse(what);
}

template <int Table, size_t N, size_t... I>
constexpr void fill_unknown(void* (&slots)[N], std::index_sequence<I...>) {
  ((slots[I + 1] = reinterpret_cast<void*>(&unknown_slot<Table, static_cast<int>(I) + 1>)), ...);
}

template <int Table, size_t N>
struct TableOf {
  void* slots[N];
  TableOf() {
    slots[0] = reinterpret_cast<void*>(N * sizeof(void*));
    fill_unknown<Table, N>(slots, std::make_index_sequence<N - 1>{});
  }
};

// ---- 6bd5fb6c: the runtime's interface --------------------------------------------

// Slot 2: the device's primary context, not made current.
CUresult runtime_primary_context(CUcontext* pctx, CUdevice dev) {
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  *pctx = reinterpret_cast<CUcontext>(primary_context(dev));
  return CUDA_SUCCESS;
}

// Slots 1 and 6: a module from a registration wrapper (older runtimes).
CUresult runtime_module_from_wrapper(CUmodule* module, const void* wrapper) {
  return cuModuleLoadData(module, wrapper);
}
CUresult runtime_module_from_wrapper_ext(CUmodule* module, const void* wrapper, void*, void*,
                                         unsigned) {
  return cuModuleLoadData(module, wrapper);
}
CUresult runtime_module_from_fatbin_ext(const void* fatbin, CUmodule* module, void*, void*,
                                        unsigned) {
  return cuModuleLoadData(module, fatbin);
}
void runtime_slot7(uintptr_t) {}
CUresult runtime_load_compilers() { return CUDA_SUCCESS; }

// ---- a094798c: the tools' callback hooks --------------------------------------------

// Slots 2 and 6 hand out zeroed buffers the runtime checks the size of: no
// tool is attached, so nothing ever writes them.
void hooks_buffer_a(void** buf, size_t* n) {
  static uint64_t zeros[128];
  *buf = zeros;
  *n = sizeof zeros;
}
void hooks_buffer_b(void** buf, size_t* n) {
  static uint64_t zeros[16];
  *buf = zeros;
  *n = sizeof zeros;
}
void no_op() {}

// ---- c693336e: context-local storage, answered in the guest ------------------------

CUresult cls_put(CUcontext ctx, void* key, void* value, void (*destructor)(CUcontext, void*, void*)) {
  Context* c = resolve_context(ctx);
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(context_mutex());
  c->storage[key] = {value, destructor};
  storage_changed();
  return CUDA_SUCCESS;
}

CUresult cls_delete(CUcontext ctx, void* key) {
  Context* c = resolve_context(ctx);
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(context_mutex());
  c->storage.erase(key);
  storage_changed();
  return CUDA_SUCCESS;
}

// NVIDIA's runtime asks this before every runtime call, almost always for the
// same context and key: the last answer is kept per thread while no storage
// changed. No current context makes the runtime make the primary one current.
CUresult cls_get(void** value, CUcontext ctx, void* key) {
  struct Answer {
    const Context* context = nullptr;
    const void* key = nullptr;
    uint64_t generation = 0;
    void* value = nullptr;
  };
  static thread_local Answer last __attribute__((tls_model("initial-exec")));
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  Context* c = resolve_context(ctx);
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  const uint64_t generation = storage_generation();
  if (last.context == c && last.key == key && last.generation == generation) {
    *value = last.value;
    return CUDA_SUCCESS;
  }
  std::lock_guard lock(context_mutex());
  auto it = c->storage.find(key);
  if (it == c->storage.end()) return CUDA_ERROR_INVALID_HANDLE;
  *value = it->second.value;
  last = {c, key, generation, it->second.value};
  return CUDA_SUCCESS;
}

// ---- 263e8860: context checks ---------------------------------------------------------

CUresult context_check(CUcontext, uint32_t* flags, void** extra) {
  if (flags) *flags = 0;
  if (extra) *extra = nullptr;
  return CUDA_SUCCESS;
}
uint32_t context_check_zero() { return 0; }

// ---- 42d85a81 (tools TLS) and 21318c60 (used by cuBLAS and cuFFT) -----------------

CUresult succeed() { return CUDA_SUCCESS; }

// 21318c60, as cuBLAS calls it around its kernels (what LUPINE's notes
// observed of NVIDIA's driver; the meaning of the values is not known, so
// nothing else is read from them). Slot 4: whether `handle` is set.
CUresult hooks_slot4(uint64_t handle, uint64_t* out) {
  if (!out) return CUDA_ERROR_UNKNOWN;
  *out = handle != 0 ? 1 : 0;
  return CUDA_SUCCESS;
}
// Slot 51: an object for (handle, kind); cuBLAS hands it to slot 39 and
// compares what that gives with its own list. A zeroed object nobody writes.
CUresult hooks_slot51(uint64_t /*handle*/, uint64_t kind, uint64_t* out) {
  static const uint64_t object[64] = {};
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  if (kind == UINT64_MAX) return CUDA_ERROR_INVALID_HANDLE;
  *out = reinterpret_cast<uint64_t>(&object[0]);
  return CUDA_SUCCESS;
}
// Slot 39: the key of that object: none (0).
CUresult hooks_slot39(uint64_t /*handle*/, uint64_t object, uint64_t* out) {
  if (!object || !out) return CUDA_ERROR_INVALID_VALUE;
  *out = 0;
  return CUDA_SUCCESS;
}

// ---- 6e163fbe: functions of a module (cuFFT) ----------------------------------------------

// Slot 7: calls each(opaque, function, owner) for every function of `module`
// and returns how many there are. cuFFT calls it after each module it loads
// and launches the functions it is given, without cuModuleGetFunction. The
// meaning of the last two arguments is not known: `owner` is passed on.
using EachFunction = void (*)(void* opaque, void* function, uint64_t owner);
uint64_t module_function_walk(uint64_t /*context*/, uint64_t module, uint64_t each, uint64_t opaque,
                              uint64_t owner, uint64_t) {
  std::vector<Function*> functions;
  if (module_functions(reinterpret_cast<void*>(module), &functions) != CUDA_SUCCESS) return 0;
  auto* call = reinterpret_cast<EachFunction>(each);
  if (call) {
    for (Function* f : functions) call(reinterpret_cast<void*>(opaque), f, owner);
  }
  return functions.size();
}

// ---- 1734dc26: the JIT compile cache (NVRTC, cuBLASLt) -------------------------------

// Every slot: no cache here. NVRTC takes a slot's success for a cache hit
// (and returns an empty program), so none succeeds; cuBLASLt calls slot 4
// without checking that the table exists, so it must exist.
CUresult no_compile_cache() { return CUDA_ERROR_NOT_SUPPORTED; }

// ---- d4082055: the integrity check --------------------------------------------------------

CUresult integrity_check(uint32_t version, uint64_t unix_seconds, uint64_t out[2]);

struct Tables {
  TableOf<1, 13> runtime;
  TableOf<2, 7> hooks;
  TableOf<3, 4> tools_tls;
  TableOf<4, 4> cls;
  TableOf<5, 4> context_checks;
  TableOf<6, 3> integrity;
  TableOf<7, 64> library_hooks;  // cuBLAS calls slots up to 51
  TableOf<8, 64> module_functions;
  TableOf<9, 16> compile_cache;

  Tables() {
    runtime.slots[1] = reinterpret_cast<void*>(&runtime_module_from_wrapper);
    runtime.slots[2] = reinterpret_cast<void*>(&runtime_primary_context);
    runtime.slots[6] = reinterpret_cast<void*>(&runtime_module_from_wrapper_ext);
    runtime.slots[7] = reinterpret_cast<void*>(&runtime_slot7);
    runtime.slots[8] = reinterpret_cast<void*>(&runtime_module_from_fatbin_ext);
    runtime.slots[12] = reinterpret_cast<void*>(&runtime_load_compilers);
    hooks.slots[2] = reinterpret_cast<void*>(&hooks_buffer_a);
    hooks.slots[6] = reinterpret_cast<void*>(&hooks_buffer_b);
    for (int i : {1, 3, 4, 5}) hooks.slots[i] = reinterpret_cast<void*>(&no_op);
    for (int i : {1, 2, 3}) tools_tls.slots[i] = reinterpret_cast<void*>(&succeed);
    cls.slots[0] = reinterpret_cast<void*>(&cls_put);  // this table has no size slot
    cls.slots[1] = reinterpret_cast<void*>(&cls_delete);
    cls.slots[2] = reinterpret_cast<void*>(&cls_get);
    context_checks.slots[2] = reinterpret_cast<void*>(&context_check);
    context_checks.slots[3] = reinterpret_cast<void*>(&context_check_zero);
    integrity.slots[1] = reinterpret_cast<void*>(&integrity_check);
    library_hooks.slots[4] = reinterpret_cast<void*>(&hooks_slot4);
    library_hooks.slots[39] = reinterpret_cast<void*>(&hooks_slot39);
    library_hooks.slots[51] = reinterpret_cast<void*>(&hooks_slot51);
    module_functions.slots[7] = reinterpret_cast<void*>(&module_function_walk);
    for (size_t i = 1; i < 16; ++i) compile_cache.slots[i] = reinterpret_cast<void*>(&no_compile_cache);
  }
};

Tables& tables() {
  static auto* t = new Tables;  // leaked: the runtime holds its slots until exit
  return *t;
}

CUresult integrity_check(uint32_t version, uint64_t unix_seconds, uint64_t out[2]) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  const DeviceInfo* info = nullptr;
  if (CUresult r = device_info(&info); r != CUDA_SUCCESS) return r;
  IntegrityInput in;
  in.version = version;
  in.unix_seconds = unix_seconds;
  in.driver_version = kDriverVersion;
  in.process = static_cast<uint32_t>(getpid());
  in.thread = static_cast<uint32_t>(pthread_self());
  in.integrity_table = tables().integrity.slots;
  in.runtime_table = tables().runtime.slots;
  in.hash_function = reinterpret_cast<const void*>(&integrity_check);
  for (int d = 0; d < info->count; ++d) {
    in.devices.push_back({info->uuid, info->attribute(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
                          info->attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
                          info->attribute(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)});
  }
  integrity_hash(in, out);
  return CUDA_SUCCESS;
}

struct Known {
  uint8_t uuid[16];
  void** (*table)();
  const char* what;
};

void** runtime_table() { return tables().runtime.slots; }
void** hooks_table() { return tables().hooks.slots; }
void** tools_tls_table() { return tables().tools_tls.slots; }
void** cls_table() { return tables().cls.slots; }
void** context_checks_table() { return tables().context_checks.slots; }
void** integrity_table() { return tables().integrity.slots; }
void** library_hooks_table() { return tables().library_hooks.slots; }
void** module_functions_table() { return tables().module_functions.slots; }
void** compile_cache_table() { return tables().compile_cache.slots; }

// Byte order as the caller passes them (the first three groups little-endian).
constexpr Known kKnown[] = {
    {{0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9},
     &runtime_table, "runtime interface"},
    {{0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66},
     &hooks_table, "tools callback hooks"},
    {{0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc},
     &tools_tls_table, "tools thread-local storage"},
    {{0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93},
     &cls_table, "context-local storage"},
    {{0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e},
     &context_checks_table, "context checks"},
    {{0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2},
     &integrity_table, "integrity check"},
    {{0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2},
     &library_hooks_table, "library hooks (cuBLAS, cuFFT)"},
    {{0x6e, 0x16, 0x3f, 0xbe, 0xb9, 0x58, 0x44, 0x4d, 0x83, 0x5c, 0xe1, 0x82, 0xaf, 0xf1, 0x99, 0x1e},
     &module_functions_table, "functions of a module (cuFFT)"},
    {{0x17, 0x34, 0xdc, 0x26, 0x80, 0x0d, 0x47, 0x45, 0x87, 0x26, 0xc0, 0xf1, 0xe7, 0xdd, 0x8b, 0xca},
     &compile_cache_table, "JIT compile cache (NVRTC, cuBLASLt): every slot refuses"},
};

}  // namespace

extern "C" CUresult cuGetExportTable(const void** table, const CUuuid* id) {
  if (!table || !id) return CUDA_ERROR_INVALID_VALUE;
  *table = nullptr;
  for (const Known& k : kKnown) {
    if (std::memcmp(k.uuid, id->bytes, 16) == 0) {
      *table = k.table();
      return CUDA_SUCCESS;
    }
  }
  // Unknown tables, and those whose refusal is their correct answer (NVRTC's
  // compile cache: answering it would make NVRTC return empty output).
  const auto* u = reinterpret_cast<const uint8_t*>(id->bytes);
  char what[80];
  std::snprintf(what, sizeof what,
                "the driver's private table %02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
                u[13], u[14], u[15]);
  // Refusing these is their correct answer: f8cff951 is fetched and never
  // used; da9151d3 is NVRTC's compile cache (with 1734dc26, served above with
  // every slot refusing), which answered would make NVRTC return empty
  // output, and refused is turned off.
  constexpr uint32_t kRefusedOnPurpose[] = {0x51f9cff8, 0xd35191da};
  uint32_t first = 0;
  std::memcpy(&first, u, sizeof first);
  bool quiet = false;
  for (uint32_t r : kRefusedOnPurpose) quiet |= first == r;
  if (!quiet) {
    intercept::log_once(what, "%s is unknown to vgpu and refused (CUDA_ERROR_NOT_FOUND); a "
                        "library that needs it will fail", what);
  }
  return CUDA_ERROR_NOT_FOUND;
}
