// User objects: a program hands a graph the lifetime of a resource its work
// uses (cudaUserObjectCreate, cudaGraphRetainUserObject); the destructor runs
// when the last reference goes. A graph holds references of its own, and so
// does each copy of it (a clone, an instantiation, a child node), so the
// resource outlives every launch that may use it.
//
// CUDA runs destructors on a thread of its own once the work of the graphs
// that held the last references is done. Here the reference that goes last
// runs it: from the program's own cuUserObjectRelease at once (no graph holds
// it then), from a graph or instantiated graph going after the context's work
// has finished (cuCtxSynchronize), which may be later than CUDA would, never
// earlier.
#include <mutex>
#include <unordered_set>

#include "graph.h"

namespace vgpu::driver::graph {

struct UserObject {
  void* ptr = nullptr;
  CUhostFn destroy = nullptr;
  unsigned refs = 0;  // guarded by objects_mu()
};

namespace {

std::mutex& objects_mu() {
  static auto* m = new std::mutex;
  return *m;
}
std::unordered_set<UserObject*>& objects() {
  static auto* s = new std::unordered_set<UserObject*>;  // leaked: used until exit
  return *s;
}

UserObject* live(CUuserObject handle) {
  auto* o = reinterpret_cast<UserObject*>(handle);
  return objects().count(o) ? o : nullptr;
}

}  // namespace

void retain(UserObject* o, unsigned count) {
  std::lock_guard lock(objects_mu());
  o->refs += count;
}

void release(UserObject* o, unsigned count, bool after_work) {
  {
    std::lock_guard lock(objects_mu());
    if (count > o->refs) count = o->refs;
    o->refs -= count;
    if (o->refs > 0) return;
    objects().erase(o);
  }
  if (after_work) (void)cuCtxSynchronize();
  o->destroy(o->ptr);
  delete o;
}

}  // namespace vgpu::driver::graph

using namespace vgpu::driver;
using namespace vgpu::driver::graph;

extern "C" {

CUresult cuUserObjectCreate(CUuserObject* out, void* ptr, CUhostFn destroy, unsigned initial, unsigned flags) {
  if (!out || !destroy || initial == 0 || flags != CU_USER_OBJECT_NO_DESTRUCTOR_SYNC) return CUDA_ERROR_INVALID_VALUE;
  auto* o = new UserObject{ptr, destroy, initial};
  std::lock_guard lock(objects_mu());
  objects().insert(o);
  *out = reinterpret_cast<CUuserObject>(o);
  return CUDA_SUCCESS;
}

CUresult cuUserObjectRetain(CUuserObject object, unsigned count) {
  if (count == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(objects_mu());
  UserObject* o = live(object);
  if (!o) return CUDA_ERROR_INVALID_VALUE;
  o->refs += count;
  return CUDA_SUCCESS;
}

// Releasing more references than the program holds is undefined in CUDA;
// here it releases what there is.
CUresult cuUserObjectRelease(CUuserObject object, unsigned count) {
  if (count == 0) return CUDA_ERROR_INVALID_VALUE;
  UserObject* o = nullptr;
  {
    std::lock_guard lock(objects_mu());
    o = live(object);
  }
  if (!o) return CUDA_ERROR_INVALID_VALUE;
  release(o, count, false);
  return CUDA_SUCCESS;
}

// The graph takes `count` new references, or the caller's own with
// CU_GRAPH_USER_OBJECT_MOVE.
CUresult cuGraphRetainUserObject(CUgraph g, CUuserObject object, unsigned count, unsigned flags) {
  Graph* graph = live_graph(g);
  if (!graph || count == 0 || (flags & ~CU_GRAPH_USER_OBJECT_MOVE)) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(objects_mu());
  UserObject* o = live(object);
  if (!o) return CUDA_ERROR_INVALID_VALUE;
  if (!(flags & CU_GRAPH_USER_OBJECT_MOVE)) o->refs += count;
  graph->user_objects[o] += count;
  return CUDA_SUCCESS;
}

CUresult cuGraphReleaseUserObject(CUgraph g, CUuserObject object, unsigned count) {
  Graph* graph = live_graph(g);
  if (!graph || count == 0) return CUDA_ERROR_INVALID_VALUE;
  UserObject* o = nullptr;
  {
    std::lock_guard lock(objects_mu());
    o = live(object);
    auto it = o ? graph->user_objects.find(o) : graph->user_objects.end();
    if (it == graph->user_objects.end() || it->second < count) return CUDA_ERROR_INVALID_VALUE;
    if ((it->second -= count) == 0) graph->user_objects.erase(it);
  }
  release(o, count, false);  // the graph itself was never launched: only copies of it are
  return CUDA_SUCCESS;
}

}  // extern "C"
