// The cuda backend: which queued work a batch takes (batches()), and how
// each item is checked against the context's tables and packed for the
// worker (wire::BatchItem); what the tables say once an item ran. The
// batches themselves are cuda_batch.cpp's.
#include <algorithm>
#include <cstring>

#include "cuda_backend_impl.h"

namespace vgpu::executor::cuda {
namespace {

using common::Overloaded;

constexpr size_t padded(size_t n) { return (n + 7) / 8 * 8; }

}  // namespace

bool CudaBackend::batches(const WorkOp& op) const {
  return std::visit(Overloaded{
                        [](const Launch&) { return true; },
                        [](const Memset&) { return true; },
                        [](const CopyDtoD&) { return true; },
                        [](const CopyHtoD& c) { return c.size <= wire::kMaxInlineCopyBytes; },
                        [](const CopyDtoH& c) { return c.size <= wire::kMaxInlineCopyBytes; },
                        [](const RecordEvent&) { return true; },
                        [](const WaitEvent&) { return true; },
                        [](const DestroyStream&) { return true; },
                        [](const auto&) { return false; },
                    },
                    op);
}

// One item for a batch, checked against the context's tables again (a fault
// or a reset may have come since accept()). ctx.mu held. kSuccess and *item
// filled; or why the item cannot run (*what unset).
Status CudaBackend::pack_item(Context& ctx, const Work& w, wire::BatchItem* b,
                              std::span<const uint8_t>* bytes, std::string* what) {
  const StreamState* stream = ctx.stream(w.stream);
  if (!stream) return Status::kInvalidResourceHandle;
  b->stream = w.stream;
  b->stream_flags = (stream->flags & common::kStreamNonBlocking) ? wire::kStreamNonBlocking : 0;
  b->stream_priority = stream->priority;
  uint64_t start = 0;
  auto in_one = [&](uint64_t addr, uint64_t size) {
    return ctx.allocations.resolve(addr, size, true, &start);
  };
  return std::visit(
      Overloaded{
          [&](const Launch& l) {
            auto f = ctx.functions.find(l.function);
            if (f == ctx.functions.end()) return Status::kInvalidResourceHandle;
            if (l.params.size() != f->second.param_bytes) return Status::kInvalidValue;
            b->kind = wire::ItemKind::kLaunch;
            b->a = l.function;
            std::copy_n(l.grid, 3, b->grid);
            std::copy_n(l.block, 3, b->block);
            b->shared_mem = l.shared_mem;
            b->flags = wire::launch_flags(l.cooperative, l.cluster);
            *bytes = l.params;
            *what = "kernel " + f->second.name;
            return Status::kSuccess;
          },
          [&](const Memset& m) {
            if (m.size > 0 && !in_one(m.dst, m.size)) return Status::kInvalidValue;
            b->kind = m.size > 0 ? wire::ItemKind::kMemset : wire::ItemKind::kNothing;
            b->a = m.dst;
            b->b = m.size;
            b->c = m.value;
            *what = "a memset";
            return Status::kSuccess;
          },
          [&](const CopyDtoD& c) {
            if (c.size > 0 && (!in_one(c.src, c.size) || !in_one(c.dst, c.size)))
              return Status::kInvalidValue;
            b->kind = c.size > 0 ? wire::ItemKind::kCopyOnDevice : wire::ItemKind::kNothing;
            b->a = c.dst;
            b->b = c.src;
            b->c = c.size;
            *what = "a copy on the device";
            return Status::kSuccess;
          },
          [&](const CopyHtoD& c) {
            if (c.size > wire::kMaxInlineCopyBytes)
              return Status::kNotSupported;  // batches() said no
            if (c.size > 0 && (!c.src || !in_one(c.dst, c.size))) return Status::kInvalidValue;
            b->kind = c.size > 0 ? wire::ItemKind::kCopyIn : wire::ItemKind::kNothing;
            b->a = c.dst;
            if (c.size > 0) *bytes = {c.src, c.size};
            *what = "a copy to the device";
            return Status::kSuccess;
          },
          [&](const CopyDtoH& c) {
            if (c.size > wire::kMaxInlineCopyBytes)
              return Status::kNotSupported;  // batches() said no
            if (c.size > 0 && (!c.dst || !in_one(c.src, c.size))) return Status::kInvalidValue;
            b->kind = c.size > 0 ? wire::ItemKind::kCopyOut : wire::ItemKind::kNothing;
            b->a = c.src;
            b->c = c.size;
            *what = "a copy from the device";
            return Status::kSuccess;
          },
          [&](const RecordEvent& r) {
            if (!ctx.events.count(r.event)) return Status::kInvalidResourceHandle;
            b->kind = wire::ItemKind::kRecordEvent;
            b->a = r.event;
            *what = "an event record";
            return Status::kSuccess;
          },
          [&](const WaitEvent& e) {
            // An event never recorded has nothing to wait for (as in CUDA).
            auto it = ctx.events.find(e.event);
            b->kind =
                it != ctx.events.end() ? wire::ItemKind::kWaitEvent : wire::ItemKind::kNothing;
            b->a = e.event;
            *what = "a wait for an event";
            return Status::kSuccess;
          },
          [&](const DestroyStream& d) {
            if (d.stream <= 2 || !ctx.streams.count(d.stream))
              return Status::kInvalidResourceHandle;
            b->kind = wire::ItemKind::kDestroyStream;
            *what = "a stream destruction";
            return Status::kSuccess;
          },
          [](const auto&) { return Status::kNotSupported; },  // batches() said no
      },
      w.op);
}

// The bytes a batched copy from the device brings back in a reply (0 for
// any other item).
uint64_t CudaBackend::reply_bytes(const Work& w) const {
  const CopyDtoH* c = std::get_if<CopyDtoH>(&w.op);
  return c && batches(w.op) ? padded(c->size) : 0;
}

// Packs the items at the front of `works` that can go into a batch request,
// as many as one message holds, and as many copies from the device as a
// reply holds beside the `out_bytes` already in flight. ctx.mu held.
// Returns how many; *first describes the first, for the log; *refused says
// why the first cannot run when none is packed.
size_t CudaBackend::pack_batch(Context& ctx, std::span<const Work* const> works, uint64_t out_bytes,
                               std::vector<uint8_t>* tail, std::string* first, Status* refused) {
  const size_t most = std::min<size_t>(works.size(), wire::kMaxBatch);
  size_t count = 0;
  for (; count < most; ++count) {
    const Work& w = *works[count];
    if (w.context != ctx.id || !batches(w.op)) break;
    wire::BatchItem b;
    std::span<const uint8_t> bytes;
    std::string what;
    const Status st = pack_item(ctx, w, &b, &bytes, &what);
    if (!ok(st)) {
      if (count == 0) *refused = st;
      break;
    }
    const size_t size = sizeof b + padded(bytes.size());
    if (sizeof(wire::Request) + tail->size() + size > wire::kMaxMessageBytes) break;
    out_bytes += reply_bytes(w);
    if (out_bytes > wire::kMaxReplyCopyBytes) break;
    b.bytes = static_cast<uint32_t>(bytes.size());
    const size_t at = tail->size();
    tail->resize(at + size, 0);
    std::memcpy(tail->data() + at, &b, sizeof b);
    if (!bytes.empty()) std::memcpy(tail->data() + at + sizeof b, bytes.data(), bytes.size());
    if (count == 0) *first = std::move(what);
  }
  return count;
}

// What the tables say once an item of a batch has run.
void CudaBackend::after_item(Context& ctx, const Work& work) {
  if (const RecordEvent* e = std::get_if<RecordEvent>(&work.op)) {
    if (auto it = ctx.events.find(e->event); it != ctx.events.end()) it->second.recorded = true;
  } else if (const DestroyStream* d = std::get_if<DestroyStream>(&work.op)) {
    ctx.streams.erase(d->stream);
  }
}

}  // namespace vgpu::executor::cuda
