// Streams and events. Their handles are the host's; the host checks each one.
// A stream's flags and priority are kept here too, for the queries.
#include <algorithm>

#include "device_output.h"
#include "managed_memory.h"
#include "context_objects.h"
#include "driver_state.h"
#include "stream_capture.h"

using namespace vgpu;
using namespace vgpu::driver;

namespace {

struct StreamInfo {
  unsigned flags;
  int priority;
  unsigned long long id;
  CUaccessPolicyWindow window{};
  CUsynchronizationPolicy sync_policy = CU_SYNC_POLICY_AUTO;
};
std::mutex& stream_mutex() {
  static auto* mu = new std::mutex;
  return *mu;
}
std::map<uint64_t, StreamInfo>& streams() {
  static auto* m = new std::map<uint64_t, StreamInfo>;  // leaked: used until exit
  return *m;
}

// Stream priorities the host honours within a tenant: 0 (least) to this.
constexpr int kGreatestPriority = -5;

uint64_t event_handle(CUevent e) { return reinterpret_cast<uint64_t>(e); }

// A stream or event query. Done: what the work wrote is the CPU's to read.
template <class Request>
CUresult query(const Request& req) {
  Status s;
  {
    Connection& c = Connection::instance();
    Connection::Lock lock(c);
    typename proto::Call<proto::OpOf<Request>::value>::Reply rep{};
    s = c.call(req, {}, &rep);
  }
  if (ok(s)) managed::synchronized();
  return to_cu(s);
}

// Query results: "not ready" is an answer, not an error to remember.
CUresult synced(Connection& c, Status own) {
  return to_cu(intercept::with_async_errors(c, own));
}

}  // namespace

extern "C" {

CUresult cuStreamCreateWithPriority(CUstream* stream, unsigned flags, int priority) {
  if (!stream) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  // Clamped into the range cuCtxGetStreamPriorityRange reports, as CUDA does.
  priority = std::clamp(priority, kGreatestPriority, 0);
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  proto::StreamCreateReply rep{};
  if (Status s = c.call(proto::StreamCreateRequest{flags, priority}, {}, &rep); !ok(s)) return to_cu(s);
  std::lock_guard slock(stream_mutex());
  static unsigned long long next_id = 1;
  streams()[rep.stream] = {flags, priority, ++next_id};
  *stream = reinterpret_cast<CUstream>(rep.stream);
  owned::add(owned::Kind::kStream, rep.stream);
  return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream* stream, unsigned flags) {
  return cuStreamCreateWithPriority(stream, flags, 0);
}

CUresult cuStreamDestroy_v2(CUstream stream) {
  const uint64_t h = stream_handle(stream);
  if (h == 0) return CUDA_ERROR_INVALID_HANDLE;
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  if (Status s = c.post(proto::StreamDestroyRequest{h}, {}, nullptr); !ok(s)) return to_cu(s);
  std::lock_guard slock(stream_mutex());
  streams().erase(h);
  owned::remove(owned::Kind::kStream, h);
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream stream) {
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  if (capture::capturing(stream)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  CUresult r;
  {
    Connection& c = Connection::instance();
    Connection::Lock lock(c);
    proto::StreamSynchronizeReply rep{};
    r = synced(c, c.call(proto::StreamSynchronizeRequest{stream_handle(stream)}, {}, &rep));
  }
  device_output::flush();
  managed::synchronized();
  return r;
}

CUresult cuStreamQuery(CUstream stream) {
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  return query(proto::StreamQueryRequest{stream_handle(stream)});
}

CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned flags) {
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  bool captured = false;
  if (CUresult r = capture::wait_event(stream, event, &captured); r != CUDA_SUCCESS || captured) return r;
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  return to_cu(c.post(proto::StreamWaitEventRequest{stream_handle(stream), event_handle(event), flags, 0},
                      {}, nullptr));
}

CUresult cuStreamGetPriority(CUstream stream, int* priority) {
  if (!priority) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard slock(stream_mutex());
  auto it = streams().find(stream_handle(stream));
  *priority = it == streams().end() ? 0 : it->second.priority;
  return CUDA_SUCCESS;
}

CUresult cuStreamGetFlags(CUstream stream, unsigned* flags) {
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard slock(stream_mutex());
  auto it = streams().find(stream_handle(stream));
  *flags = it == streams().end() ? 0 : it->second.flags;
  return CUDA_SUCCESS;
}

CUresult cuStreamGetId(CUstream stream, unsigned long long* id) {
  if (!id) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard slock(stream_mutex());
  auto it = streams().find(stream_handle(stream));
  *id = it == streams().end() ? 0 : it->second.id;
  return CUDA_SUCCESS;
}

CUresult cuStreamGetCtx(CUstream, CUcontext* ctx) {
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  Context* c = current_context();
  *ctx = reinterpret_cast<CUcontext>(c ? c : primary_context(0));
  return CUDA_SUCCESS;
}

CUresult cuStreamGetCtx_v2(CUstream stream, CUcontext* ctx, CUgreenCtx* green) {
  if (!ctx || !green) return CUDA_ERROR_INVALID_VALUE;
  *green = nullptr;  // green contexts are refused where they would be made
  return cuStreamGetCtx(stream, ctx);
}

// Stream attributes: the priority is the stream's own; the L2 access-policy
// window and synchronisation policy are hints, kept to read back.
CUresult cuStreamGetAttribute(CUstream stream, CUstreamAttrID attr, CUstreamAttrValue* value) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard slock(stream_mutex());
  auto it = streams().find(stream_handle(stream));
  switch (attr) {
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
      value->priority = it == streams().end() ? 0 : it->second.priority;
      return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
      value->accessPolicyWindow = it == streams().end() ? CUaccessPolicyWindow{} : it->second.window;
      return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
      value->syncPolicy = it == streams().end() ? CU_SYNC_POLICY_AUTO : it->second.sync_policy;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuStreamSetAttribute(CUstream stream, CUstreamAttrID attr, const CUstreamAttrValue* value) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard slock(stream_mutex());
  auto it = streams().find(stream_handle(stream));
  if (it == streams().end()) return CUDA_ERROR_INVALID_HANDLE;  // the legacy stream has none
  switch (attr) {
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
      // The host schedules by the priority a stream was made with.
      if (std::clamp(value->priority, kGreatestPriority, 0) == it->second.priority) return CUDA_SUCCESS;
      return refuse("cuStreamSetAttribute(priority) on a stream made with another priority");
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
      it->second.window = value->accessPolicyWindow;
      return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
      it->second.sync_policy = value->syncPolicy;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuStreamCopyAttributes(CUstream dst, CUstream src) {
  std::lock_guard slock(stream_mutex());
  auto from = streams().find(stream_handle(src));
  auto to = streams().find(stream_handle(dst));
  if (to == streams().end()) return CUDA_ERROR_INVALID_HANDLE;
  to->second.window = from == streams().end() ? CUaccessPolicyWindow{} : from->second.window;
  to->second.sync_policy = from == streams().end() ? CU_SYNC_POLICY_AUTO : from->second.sync_policy;
  return CUDA_SUCCESS;
}

CUresult cuStreamGetDevice(CUstream, CUdevice* dev) {
  if (!dev) return CUDA_ERROR_INVALID_VALUE;
  *dev = 0;
  return CUDA_SUCCESS;
}

// ---- events -----------------------------------------------------------------------------

CUresult cuEventCreate(CUevent* event, unsigned flags) {
  if (!event) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  if (flags & CU_EVENT_INTERPROCESS) return refuse("cuEventCreate with CU_EVENT_INTERPROCESS (IPC)");
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  proto::EventCreateReply rep{};
  if (Status s = c.call(proto::EventCreateRequest{flags, 0}, {}, &rep); !ok(s)) return to_cu(s);
  *event = reinterpret_cast<CUevent>(rep.event);
  owned::add(owned::Kind::kEvent, rep.event);
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent event, CUstream stream) {
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  bool captured = false;
  if (CUresult r = capture::record_event(event, stream, &captured); r != CUDA_SUCCESS || captured) return r;
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  return to_cu(c.post(proto::EventRecordRequest{event_handle(event), stream_handle(stream)}, {}, nullptr));
}

CUresult cuEventRecordWithFlags(CUevent event, CUstream stream, unsigned) {
  return cuEventRecord(event, stream);
}

CUresult cuEventSynchronize(CUevent event) {
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  CUresult r;
  {
    Connection& c = Connection::instance();
    Connection::Lock lock(c);
    proto::EventSynchronizeReply rep{};
    r = synced(c, c.call(proto::EventSynchronizeRequest{event_handle(event)}, {}, &rep));
  }
  device_output::flush();
  managed::synchronized();
  return r;
}

CUresult cuEventQuery(CUevent event) {
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  return query(proto::EventQueryRequest{event_handle(event)});
}

CUresult cuEventElapsedTime_v2(float* ms, CUevent start, CUevent end) {
  if (!ms) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  proto::EventElapsedTimeReply rep{};
  const Status s = c.call(proto::EventElapsedTimeRequest{event_handle(start), event_handle(end)}, {}, &rep);
  if (!ok(s)) return to_cu(s);
  *ms = static_cast<float>(static_cast<double>(rep.elapsed_ns) / 1e6);
  return CUDA_SUCCESS;
}

CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  return cuEventElapsedTime_v2(ms, start, end);
}

CUresult cuEventDestroy_v2(CUevent event) {
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  const Status s = c.post(proto::EventDestroyRequest{event_handle(event)}, {}, nullptr);
  if (ok(s)) owned::remove(owned::Kind::kEvent, event_handle(event));
  return to_cu(s);
}

}  // extern "C"
