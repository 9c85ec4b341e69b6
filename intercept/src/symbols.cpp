// __device__ and __constant__ variables, by their host shadow address.
#include "api.h"
#include "copy.h"
#include "registry.h"

using namespace vgpu;
using namespace vgpu::intercept;

namespace {

// Resolves `symbol` and checks [offset, offset + count) lies inside it.
Status symbol_range(Connection& c, const void* symbol, size_t count, size_t offset, uint64_t* dptr) {
  VarRec* v = Registry::instance().var_by_host(symbol);
  if (!v) return Status::kInvalidSymbol;
  if (Status s = Registry::instance().resolve(c, *v); !ok(s)) return s;
  if (offset > v->size || count > v->size - offset) return Status::kInvalidValue;
  *dptr = v->dptr + offset;
  return Status::kSuccess;
}

}  // namespace

extern "C" {

cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset,
                               cudaMemcpyKind kind) {
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  uint64_t dptr = 0;
  if (Status s = symbol_range(c, symbol, count, offset, &dptr); !ok(s)) return result(s);
  if (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDefault)
    return result(copy_to_device(c, dptr, src, count, 0, true));
  if (kind == cudaMemcpyDeviceToDevice)
    return result(copy_on_device(c, dptr, reinterpret_cast<uint64_t>(src), count, 0, true));
  return result(Status::kInvalidMemcpyDirection);
}

cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset,
                                 cudaMemcpyKind kind) {
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  uint64_t dptr = 0;
  if (Status s = symbol_range(c, symbol, count, offset, &dptr); !ok(s)) return result(s);
  if (kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDefault)
    return result(copy_from_device(c, dst, dptr, count, 0, true));
  if (kind == cudaMemcpyDeviceToDevice)
    return result(copy_on_device(c, reinterpret_cast<uint64_t>(dst), dptr, count, 0, true));
  return result(Status::kInvalidMemcpyDirection);
}

cudaError_t cudaMemcpyToSymbol_ptds(const void* symbol, const void* src, size_t count,
                                    size_t offset, cudaMemcpyKind kind) {
  return cudaMemcpyToSymbol(symbol, src, count, offset, kind);
}

cudaError_t cudaMemcpyFromSymbol_ptds(void* dst, const void* symbol, size_t count, size_t offset,
                                      cudaMemcpyKind kind) {
  return cudaMemcpyFromSymbol(dst, symbol, count, offset, kind);
}

cudaError_t cudaGetSymbolAddress(void** devPtr, const void* symbol) {
  if (!devPtr) return result(Status::kInvalidValue);
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  uint64_t dptr = 0;
  if (Status s = symbol_range(c, symbol, 0, 0, &dptr); !ok(s)) return result(s);
  *devPtr = reinterpret_cast<void*>(dptr);
  return cudaSuccess;
}

cudaError_t cudaGetSymbolSize(size_t* size, const void* symbol) {
  if (!size) return result(Status::kInvalidValue);
  VarRec* v = Registry::instance().var_by_host(symbol);
  if (!v) return result(Status::kInvalidSymbol);
  *size = v->size;
  return cudaSuccess;
}

}  // extern "C"
