// Streams and events.
#include "vgpu/executor/call_handler.h"

namespace vgpu::executor {

using namespace vgpu::proto;


Outcome CallHandler::handle(const vgpu_msg_header&, const StreamCreateRequest& r,
                            std::span<const uint8_t>) {
  StreamCreateReply rep{};
  if (Status s = backend_->stream_create(caller_->context, r.flags, r.priority, &rep.stream); !ok(s))
    return Outcome::failure(s);
  Outcome o;
  o.set_reply(rep);
  return o;
}

Outcome CallHandler::handle(const vgpu_msg_header& h, const StreamDestroyRequest& r,
                            std::span<const uint8_t>) {
  return queue(h, r.stream, DestroyStream{r.stream});
}

Outcome CallHandler::handle(const vgpu_msg_header& h, const StreamSynchronizeRequest& r,
                            std::span<const uint8_t>) {
  return queue(h, r.stream, Synchronize{});
}

Outcome CallHandler::handle(const vgpu_msg_header&, const StreamQueryRequest& r,
                            std::span<const uint8_t>) {
  Outcome o = Outcome::failure(backend_->stream_query(caller_->context, r.stream));
  if (ok(o.status)) o.set_reply(StreamQueryReply{});
  return o;
}

Outcome CallHandler::handle(const vgpu_msg_header& h, const StreamWaitEventRequest& r,
                            std::span<const uint8_t>) {
  return queue(h, r.stream, WaitEvent{r.event});
}

Outcome CallHandler::handle(const vgpu_msg_header&, const EventCreateRequest& r,
                            std::span<const uint8_t>) {
  EventCreateReply rep{};
  if (Status s = backend_->event_create(caller_->context, r.flags, &rep.event); !ok(s))
    return Outcome::failure(s);
  Outcome o;
  o.set_reply(rep);
  return o;
}

Outcome CallHandler::handle(const vgpu_msg_header& h, const EventRecordRequest& r,
                            std::span<const uint8_t>) {
  return queue(h, r.stream, RecordEvent{r.event});
}

Outcome CallHandler::handle(const vgpu_msg_header& h, const EventSynchronizeRequest& r,
                            std::span<const uint8_t>) {
  // Work runs in order per caller, so waiting for the event is a barrier;
  // still, the event must be this caller's.
  if (Status s = backend_->event_query(caller_->context, r.event);
      !ok(s) && s != Status::kNotReady)
    return Outcome::failure(s);
  return queue(h, kDefaultStream, Synchronize{});
}

Outcome CallHandler::handle(const vgpu_msg_header&, const EventQueryRequest& r,
                            std::span<const uint8_t>) {
  Outcome o = Outcome::failure(backend_->event_query(caller_->context, r.event));
  if (ok(o.status)) o.set_reply(EventQueryReply{});
  return o;
}

Outcome CallHandler::handle(const vgpu_msg_header&, const EventElapsedTimeRequest& r,
                            std::span<const uint8_t>) {
  EventElapsedTimeReply rep{};
  if (Status s = backend_->event_elapsed(caller_->context, r.start, r.end, &rep.elapsed_ns); !ok(s))
    return Outcome::failure(s);
  Outcome o;
  o.set_reply(rep);
  return o;
}

Outcome CallHandler::handle(const vgpu_msg_header& h, const EventDestroyRequest& r,
                            std::span<const uint8_t>) {
  return queue(h, kDefaultStream, DestroyEvent{r.event});
}

}  // namespace vgpu::executor
