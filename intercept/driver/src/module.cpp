// Modules, libraries, kernels and functions. An image is parsed here (to pack
// kernel arguments) and sent to the host when first used; the host parses it
// again and trusts only its own result. CUlibrary and CUmodule are the same
// object here, and so are CUkernel and CUfunction: NVIDIA's runtime launches
// a CUkernel handle with cuLaunchKernel directly.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

#include "device_output.h"
#include "context_objects.h"
#include "driver_state.h"
#include "managed_memory.h"
#include "device_memory.h"
#include "log.h"

namespace vgpu::driver {

using intercept::log_line;

Objects& Objects::instance() {
  static auto* o = new Objects;  // leaked: handles stay valid until exit
  return *o;
}

Module* Objects::add_module(std::vector<uint8_t> fatbin) {
  auto m = std::make_unique<Module>();
  m->image = std::move(fatbin);
  Module* raw = m.get();
  modules_.push_back(std::move(m));
  module_handles_.insert(raw);
  return raw;
}

void Objects::remove_module(Module* m) {
  generation_.fetch_add(1, std::memory_order_acq_rel);
  for (auto& [name, f] : m->functions) function_handles_.erase(f.get());
  module_handles_.erase(m);
  std::erase_if(modules_, [m](const auto& p) { return p.get() == m; });
}

Module* Objects::module(void* handle) const {
  return module_handles_.count(handle) ? static_cast<Module*>(handle) : nullptr;
}

Function* Objects::function(void* handle) const {
  return function_handles_.count(handle) ? static_cast<Function*>(handle) : nullptr;
}

CUresult Objects::load(Connection& c, Module& m) {
  if (m.host_module) return CUDA_SUCCESS;
  if (m.load_status != CUDA_SUCCESS) return m.load_status;
  if (!m.parsed) {
    if (fatbin::Error e = fatbin::parse(m.image, &m.info); e != fatbin::Error::kNone) {
      log_line("cannot parse a module image: %s", std::string(fatbin::error_name(e)).c_str());
      return m.load_status = CUDA_ERROR_INVALID_IMAGE;
    }
    m.parsed = true;
  }
  uint64_t offset = 0;
  if (Status s = c.stage(m.image.size(), &offset); !ok(s)) {
    if (s == Status::kInvalidValue) {
      log_line("a module image of %zu bytes does not fit the data area", m.image.size());
      return m.load_status = CUDA_ERROR_INVALID_IMAGE;
    }
    return to_cu(s);
  }
  std::memcpy(c.data(offset), m.image.data(), m.image.size());
  proto::ModuleLoadReply rep{};
  const Status s = c.call(proto::ModuleLoadRequest{offset, m.image.size()}, {}, &rep);
  c.unstage(offset);
  if (!ok(s)) {
    if (s != Status::kDevicesUnavailable) m.load_status = to_cu(s);
    return to_cu(s);
  }
  m.host_module = rep.module;
  return CUDA_SUCCESS;
}

CUresult Objects::get_function(Connection& c, Module& m, const std::string& name, Function** out) {
  if (auto it = m.functions.find(name); it != m.functions.end()) {
    *out = it->second.get();
    return CUDA_SUCCESS;
  }
  if (CUresult r = load(c, m); r != CUDA_SUCCESS) return r;
  const fatbin::Kernel* layout = m.info.find_kernel(name);
  if (!layout) return CUDA_ERROR_NOT_FOUND;
  proto::FunctionGetReply rep{};
  const auto bytes = std::span(reinterpret_cast<const uint8_t*>(name.data()), name.size());
  if (Status s = c.call(proto::FunctionGetRequest{m.host_module}, bytes, &rep); !ok(s))
    return s == Status::kInvalidDeviceFunction ? CUDA_ERROR_NOT_FOUND : to_cu(s);
  if (rep.param_bytes != layout->param_bytes) {
    log_line("kernel %s: the host reads %u parameter bytes, this image packs %u", name.c_str(),
             rep.param_bytes, layout->param_bytes);
    return CUDA_ERROR_INVALID_IMAGE;
  }
  auto f = std::make_unique<Function>();
  f->module = &m;
  f->name = name;
  f->layout = layout;
  f->host_function = rep.function;
  f->prints = m.info.calls_printf;
  std::copy_n(layout->cluster, 3, f->required_cluster);
  *out = f.get();
  function_handles_.insert(f.get());
  m.functions[name] = std::move(f);
  return CUDA_SUCCESS;
}

CUresult Objects::get_global(Connection& c, Module& m, const std::string& name, uint64_t* dptr,
                             uint64_t* size) {
  if (auto it = m.globals.find(name); it != m.globals.end()) {
    *dptr = it->second.first;
    *size = it->second.second;
    return CUDA_SUCCESS;
  }
  if (CUresult r = load(c, m); r != CUDA_SUCCESS) return r;
  const fatbin::Variable* v = m.info.find_variable(name);
  if (!v) return CUDA_ERROR_NOT_FOUND;
  proto::VarGetReply rep{};
  const auto bytes = std::span(reinterpret_cast<const uint8_t*>(name.data()), name.size());
  if (Status s = c.call(proto::VarGetRequest{m.host_module, v->size}, bytes, &rep); !ok(s))
    return to_cu(s);
  intercept::DeviceMemory::instance().add(rep.dptr, v->size);
  m.globals[name] = {rep.dptr, v->size};
  *dptr = rep.dptr;
  *size = v->size;
  return CUDA_SUCCESS;
}

}  // namespace vgpu::driver

using namespace vgpu;
using namespace vgpu::driver;

namespace {

// Runs `fn(Module&, Connection&)` with both locks held (objects, then the
// connection), if `handle` is a live module or library.
template <class Fn>
CUresult with_module(void* handle, Fn&& fn) {
  Objects& o = Objects::instance();
  std::lock_guard lock(o.mutex());
  Module* m = o.module(handle);
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  Connection& c = Connection::instance();
  Connection::Lock clock(c);
  return fn(*m, c);
}

// Runs `fn(Function&)` with the objects lock held, if `handle` is a live
// function or kernel.
template <class Fn>
CUresult with_function(void* handle, Fn&& fn) {
  Objects& o = Objects::instance();
  std::lock_guard lock(o.mutex());
  Function* f = o.function(handle);
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  return fn(*f);
}

CUresult load_image(void** handle, const void* image) {
  if (!handle) return CUDA_ERROR_INVALID_VALUE;
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  std::vector<uint8_t> fat;
  if (CUresult r = image_to_fatbin(image, &fat); r != CUDA_SUCCESS) return r;
  Objects& o = Objects::instance();
  std::lock_guard lock(o.mutex());
  *handle = o.add_module(std::move(fat));
  return CUDA_SUCCESS;
}

// A module is loaded on the host at once, so that a bad image fails here.
CUresult load_module_now(CUmodule* module, const void* image) {
  void* handle = nullptr;
  if (CUresult r = load_image(&handle, image); r != CUDA_SUCCESS) return r;
  Objects& o = Objects::instance();
  std::lock_guard lock(o.mutex());
  Module* m = static_cast<Module*>(handle);
  Connection& c = Connection::instance();
  Connection::Lock clock(c);
  if (CUresult r = o.load(c, *m); r != CUDA_SUCCESS) {
    o.remove_module(m);
    return r;
  }
  // A module belongs to the context it was loaded in (a library to none).
  owned::add(owned::Kind::kModule, m);
  *module = reinterpret_cast<CUmodule>(m);
  return CUDA_SUCCESS;
}

CUresult unload(void* handle) {
  std::vector<uint64_t> managed_globals;  // unmapped after the locks are let go
  Status s = Status::kSuccess;
  {
    Objects& o = Objects::instance();
    std::lock_guard lock(o.mutex());
    Module* m = o.module(handle);
    if (!m) return CUDA_ERROR_INVALID_HANDLE;
    if (m->host_module) {
      Connection& c = Connection::instance();
      Connection::Lock clock(c);
      proto::ModuleUnloadReply rep{};
      s = c.call(proto::ModuleUnloadRequest{m->host_module}, {}, &rep);
      for (auto& [name, g] : m->globals) {
        intercept::DeviceMemory::instance().remove(g.first);
        const fatbin::Variable* v = m->info.find_variable(name);
        if (v && v->managed) managed_globals.push_back(g.first);
      }
    }
    o.remove_module(m);
    owned::remove(owned::Kind::kModule, handle);
  }
  for (uint64_t g : managed_globals) managed::forget(g);
  return to_cu(s);
}

CUresult function_by_name(void* module, const char* name, Function** out) {
  if (!out || !name) return CUDA_ERROR_INVALID_VALUE;
  return with_module(module, [&](Module& m, Connection& c) {
    return Objects::instance().get_function(c, m, name, out);
  });
}

// A __managed__ variable is also mapped for the CPU (managed_memory.h), once
// the module's locks are let go: the managed lock comes before them.
CUresult global_by_name(CUdeviceptr* dptr, size_t* bytes, void* module, const char* name) {
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  uint64_t d = 0, size = 0;
  bool is_managed = false;
  const CUresult r = with_module(module, [&](Module& m, Connection& c) {
    if (CUresult got = Objects::instance().get_global(c, m, name, &d, &size); got != CUDA_SUCCESS) return got;
    const fatbin::Variable* v = m.info.find_variable(name);
    is_managed = v && v->managed;
    return CUDA_SUCCESS;
  });
  if (r != CUDA_SUCCESS) return r;
  if (is_managed) {
    if (CUresult a = managed::adopt(d, size, name); a != CUDA_SUCCESS) return a;
  }
  if (dptr) *dptr = d;
  if (bytes) *bytes = size;
  return CUDA_SUCCESS;
}

}  // namespace

CUresult vgpu::driver::module_functions(void* module, std::vector<Function*>* out) {
  return with_module(module, [&](Module& m, Connection& c) {
    Objects& o = Objects::instance();
    if (CUresult r = o.load(c, m); r != CUDA_SUCCESS) return r;
    for (const fatbin::Kernel& k : m.info.kernels) {
      Function* f = nullptr;
      if (CUresult r = o.get_function(c, m, k.name, &f); r != CUDA_SUCCESS) return r;
      out->push_back(f);
    }
    return CUDA_SUCCESS;
  });
}

extern "C" {

// ---- modules ------------------------------------------------------------------------

CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  return load_module_now(module, image);
}

// JIT options tune a compilation the host does; they are accepted and unused.
CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned, CUjit_option*, void**) {
  return load_module_now(module, image);
}

CUresult cuModuleLoadFatBinary(CUmodule* module, const void* fatbin) {
  return load_module_now(module, fatbin);
}

CUresult cuModuleLoad(CUmodule* module, const char* path) {
  if (!path) return CUDA_ERROR_INVALID_VALUE;
  std::ifstream in(path, std::ios::binary);
  if (!in) return CUDA_ERROR_FILE_NOT_FOUND;
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  bytes.push_back('\0');  // a PTX file is text without a terminator
  return load_module_now(module, bytes.data());
}

CUresult cuModuleUnload(CUmodule module) {
  device_output::flush();  // what its kernels printed, while they are known
  return unload(module);
}

CUresult cuModuleGetFunction(CUfunction* fn, CUmodule module, const char* name) {
  Function* f = nullptr;
  CUresult r = function_by_name(module, name, &f);
  if (r == CUDA_SUCCESS && fn) *fn = reinterpret_cast<CUfunction>(f);
  return fn ? r : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuModuleGetGlobal_v2(CUdeviceptr* dptr, size_t* bytes, CUmodule module, const char* name) {
  return global_by_name(dptr, bytes, module, name);
}

CUresult cuModuleGetFunctionCount(unsigned* count, CUmodule module) {
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  return with_module(module, [&](Module& m, Connection& c) {
    if (CUresult r = Objects::instance().load(c, m); r != CUDA_SUCCESS) return r;
    *count = static_cast<unsigned>(m.info.kernels.size());
    return CUDA_SUCCESS;
  });
}

CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode* mode) {
  if (!mode) return CUDA_ERROR_INVALID_VALUE;
  // Lazy: libraries then load only the images they use (cuBLAS has thousands).
  *mode = CU_MODULE_LAZY_LOADING;
  return CUDA_SUCCESS;
}

// ---- libraries (CUDA 12's context-independent modules) -------------------------------

CUresult cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option*, void**, unsigned,
                           CUlibraryOption*, void**, unsigned) {
  void* handle = nullptr;
  CUresult r = load_image(&handle, code);
  if (r == CUDA_SUCCESS) *library = reinterpret_cast<CUlibrary>(handle);
  return r;
}

CUresult cuLibraryLoadFromFile(CUlibrary* library, const char* path, CUjit_option*, void**,
                               unsigned, CUlibraryOption*, void**, unsigned) {
  if (!library) return CUDA_ERROR_INVALID_VALUE;
  CUmodule m = nullptr;
  CUresult r = cuModuleLoad(&m, path);
  if (r != CUDA_SUCCESS) return r;
  owned::remove(owned::Kind::kModule, m);  // a library is context-independent
  *library = reinterpret_cast<CUlibrary>(m);
  return CUDA_SUCCESS;
}

CUresult cuLibraryUnload(CUlibrary library) {
  device_output::flush();
  return unload(library);
}

CUresult cuLibraryGetKernel(CUkernel* kernel, CUlibrary library, const char* name) {
  Function* f = nullptr;
  CUresult r = function_by_name(library, name, &f);
  if (r == CUDA_SUCCESS && kernel) *kernel = reinterpret_cast<CUkernel>(f);
  return kernel ? r : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuLibraryGetModule(CUmodule* module, CUlibrary library) {
  if (!module) return CUDA_ERROR_INVALID_VALUE;
  return with_module(library, [&](Module& m, Connection&) {
    *module = reinterpret_cast<CUmodule>(&m);
    return CUDA_SUCCESS;
  });
}

CUresult cuLibraryGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUlibrary library, const char* name) {
  return global_by_name(dptr, bytes, library, name);
}

// What NVIDIA's runtime asks for a __managed__ variable before host code
// touches it.
CUresult cuLibraryGetManaged(CUdeviceptr* dptr, size_t* bytes, CUlibrary library, const char* name) {
  return global_by_name(dptr, bytes, library, name);
}

CUresult cuLibraryGetKernelCount(unsigned* count, CUlibrary library) {
  return cuModuleGetFunctionCount(count, reinterpret_cast<CUmodule>(library));
}

CUresult cuKernelGetFunction(CUfunction* fn, CUkernel kernel) {
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  return with_function(kernel, [&](Function& f) {
    *fn = reinterpret_cast<CUfunction>(&f);
    return CUDA_SUCCESS;
  });
}

CUresult cuKernelGetLibrary(CUlibrary* library, CUkernel kernel) {
  if (!library) return CUDA_ERROR_INVALID_VALUE;
  return with_function(kernel, [&](Function& f) {
    *library = reinterpret_cast<CUlibrary>(f.module);
    return CUDA_SUCCESS;
  });
}

CUresult cuFuncGetModule(CUmodule* module, CUfunction fn) {
  return cuKernelGetLibrary(reinterpret_cast<CUlibrary*>(module), reinterpret_cast<CUkernel>(fn));
}

CUresult cuFuncGetName(const char** name, CUfunction fn) {
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  return with_function(fn, [&](Function& f) {
    *name = f.name.c_str();
    return CUDA_SUCCESS;
  });
}

CUresult cuKernelGetName(const char** name, CUkernel kernel) {
  return cuFuncGetName(name, reinterpret_cast<CUfunction>(kernel));
}

CUresult cuFuncGetParamInfo(CUfunction fn, size_t index, size_t* offset, size_t* size) {
  return with_function(fn, [&](Function& f) {
    if (index >= f.layout->params.size()) return CUDA_ERROR_INVALID_VALUE;
    if (offset) *offset = f.layout->params[index].offset;
    if (size) *size = f.layout->params[index].size;
    return CUDA_SUCCESS;
  });
}

CUresult cuKernelGetParamInfo(CUkernel kernel, size_t index, size_t* offset, size_t* size) {
  return cuFuncGetParamInfo(reinterpret_cast<CUfunction>(kernel), index, offset, size);
}

CUresult cuFuncIsLoaded(CUfunctionLoadingState* state, CUfunction fn) {
  if (!state) return CUDA_ERROR_INVALID_VALUE;
  return with_function(fn, [&](Function&) {
    *state = CU_FUNCTION_LOADING_STATE_LOADED;  // resolved on the host when the handle was made
    return CUDA_SUCCESS;
  });
}

CUresult cuFuncLoad(CUfunction fn) {
  return with_function(fn, [](Function&) { return CUDA_SUCCESS; });
}

}  // extern "C"
