// Streams and events. Their handles are the host's; the host checks each one.
#include "api.h"

using namespace vgpu;
using namespace vgpu::intercept;

namespace {

// Query results: "not ready" is an answer, not an error to remember.
cudaError_t query_result(Status s) {
  return s == Status::kNotReady ? cudaErrorNotReady : result(s);
}

}  // namespace

extern "C" {

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int flags, int priority) {
  if (!stream) return result(Status::kInvalidValue);
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  proto::StreamCreateReply rep{};
  if (Status s = c.call(proto::StreamCreateRequest{flags, priority}, {}, &rep); !ok(s))
    return result(s);
  *stream = reinterpret_cast<cudaStream_t>(rep.stream);
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  return cudaStreamCreateWithPriority(stream, flags, 0);
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  return cudaStreamCreateWithPriority(stream, cudaStreamDefault, 0);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (stream_handle(stream) == 0) return result(Status::kInvalidResourceHandle);
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  return result(c.post(proto::StreamDestroyRequest{stream_handle(stream)}, {}, nullptr));
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  proto::StreamSynchronizeReply rep{};
  return result(
      with_async_errors(c, c.call(proto::StreamSynchronizeRequest{stream_handle(stream)}, {}, &rep)));
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  proto::StreamQueryReply rep{};
  return query_result(c.call(proto::StreamQueryRequest{stream_handle(stream)}, {}, &rep));
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  return result(c.post(
      proto::StreamWaitEventRequest{stream_handle(stream), event_handle(event), flags, 0}, {},
      nullptr));
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  if (!event) return result(Status::kInvalidValue);
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  proto::EventCreateReply rep{};
  if (Status s = c.call(proto::EventCreateRequest{flags, 0}, {}, &rep); !ok(s)) return result(s);
  *event = reinterpret_cast<cudaEvent_t>(rep.event);
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  return result(
      c.post(proto::EventRecordRequest{event_handle(event), stream_handle(stream)}, {}, nullptr));
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  proto::EventSynchronizeReply rep{};
  return result(
      with_async_errors(c, c.call(proto::EventSynchronizeRequest{event_handle(event)}, {}, &rep)));
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  proto::EventQueryReply rep{};
  return query_result(c.call(proto::EventQueryRequest{event_handle(event)}, {}, &rep));
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!ms) return result(Status::kInvalidValue);
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  proto::EventElapsedTimeReply rep{};
  const Status s =
      c.call(proto::EventElapsedTimeRequest{event_handle(start), event_handle(end)}, {}, &rep);
  if (!ok(s)) return query_result(s);
  *ms = static_cast<float>(static_cast<double>(rep.elapsed_ns) / 1e6);
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  return result(c.post(proto::EventDestroyRequest{event_handle(event)}, {}, nullptr));
}

// Per-thread default stream variants.
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) { return cudaStreamSynchronize(stream); }
cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream) { return cudaStreamQuery(stream); }
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return cudaStreamWaitEvent(stream, event, flags);
}
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream) {
  return cudaEventRecord(event, stream);
}

}  // extern "C"
