// The engine: batches of items kept in flight. Going back to the daemon
// after every item leaves the GPU idle for a round trip each time; here the
// next items are already queued behind the one running, each on its guest
// stream's driver stream (so independent streams overlap as they would
// natively), a batch may hand its last items on to the next one, and each
// item is still timed by its own events.
#include <algorithm>

#include "cu_status.h"
#include "engine.h"

namespace vgpu::executor::cuda {

CUresult Engine::stream_for(const GuestStream& g, CUstream* out) {
  // The guest's default streams are the driver's: its legacy stream waits
  // for, and is waited for by, every blocking stream, as in the guest.
  if (g.handle <= 1) {
    *out = CU_STREAM_LEGACY;
    return CUDA_SUCCESS;
  }
  if (g.handle == 2) {
    *out = CU_STREAM_PER_THREAD;
    return CUDA_SUCCESS;
  }
  if (auto it = streams_.find(g.handle); it != streams_.end()) {
    *out = it->second;
    return CUDA_SUCCESS;
  }
  const unsigned flags =
      (g.flags & wire::kStreamNonBlocking) ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT;
  CUstream s = nullptr;
  // The daemon clamped the priority to the device's range.
  const CUresult r = g.priority != 0 && api_.cuStreamCreateWithPriority
                         ? api_.cuStreamCreateWithPriority(&s, flags, g.priority)
                         : api_.cuStreamCreate(&s, flags);
  if (r != CUDA_SUCCESS) return r;
  streams_.emplace(g.handle, s);
  *out = s;
  return CUDA_SUCCESS;
}

CUresult Engine::issue_item(const ItemSpec& item, CUstream stream) {
  switch (item.kind) {
    case wire::ItemKind::kNothing:
      return CUDA_SUCCESS;
    case wire::ItemKind::kLaunch:
      return issue_launch(item.launch, stream);
    case wire::ItemKind::kMemset:
      return api_.cuMemsetD8Async(item.a, static_cast<unsigned char>(item.c), item.b, stream);
    case wire::ItemKind::kCopyOnDevice:
      return api_.cuMemcpyDtoDAsync(item.a, item.b, item.c, stream);
    case wire::ItemKind::kCopyIn:
      // From the request's own buffer: the driver takes pageable bytes in
      // before the call returns, so the buffer may be reused after it.
      return api_.cuMemcpyHtoDAsync(item.a, item.data.data(), item.data.size(), stream);
    case wire::ItemKind::kRecordEvent:
    case wire::ItemKind::kWaitEvent: {
      CUevent e = event_of(item.a);
      if (!e) return CUDA_ERROR_INVALID_HANDLE;
      return item.kind == wire::ItemKind::kRecordEvent ? api_.cuEventRecord(e, stream)
                                                       : api_.cuStreamWaitEvent(stream, e, 0);
    }
    case wire::ItemKind::kCopyOut: {
      if (item.c > wire::kMaxInlineCopyBytes) return CUDA_ERROR_INVALID_VALUE;
      const size_t slot = issued_ % kMaxItemsInFlight;
      flight_out_[slot] = static_cast<uint32_t>(item.c);
      return api_.cuMemcpyDtoHAsync(out_buffer_.data() + slot * wire::kMaxInlineCopyBytes, item.a,
                                    item.c, stream);
    }
    case wire::ItemKind::kDestroyStream: {
      // The driver lets the stream's queued work finish first.
      auto it = streams_.find(item.stream.handle);
      if (it == streams_.end()) return CUDA_SUCCESS;  // never used: nothing to destroy
      const CUresult r = api_.cuStreamDestroy(it->second);
      streams_.erase(it);
      return r;
    }
  }
  return CUDA_ERROR_INVALID_VALUE;
}

void Engine::take_out(size_t slot, CUresult result, std::vector<uint8_t>* out) const {
  const uint32_t n = flight_out_[slot];
  if (n == 0) return;
  // The bytes go back whatever happened (zeros after an error), so the
  // reply's layout depends only on the items.
  const size_t at = out->size();
  out->resize(at + (n + 7) / 8 * 8, 0);
  if (result == CUDA_SUCCESS)
    std::copy_n(out_buffer_.data() + slot * wire::kMaxInlineCopyBytes, n, out->data() + at);
}

void Engine::finish_oldest(std::vector<Timed>* done, std::vector<uint8_t>* out) {
  const size_t slot = finished_ % kMaxItemsInFlight;
  Timed t = flight_[slot];
  const CUresult waited = wait_event(slot_end_[slot]);
  if (waited == CUDA_SUCCESS) {
    t.gpu_ns = elapsed_ns(slot_start_[slot], slot_end_[slot]);
  } else if (t.result == CUDA_SUCCESS) {
    t.result = note(waited);
  }
  take_out(slot, t.result, out);
  done->push_back(t);
  ++finished_;
}

void Engine::finish_items(std::vector<Timed>* done, std::vector<uint8_t>* out) {
  while (in_flight() > 0) finish_oldest(done, out);
}

size_t Engine::run_items(std::span<const ItemSpec> items, uint64_t budget_ns, uint32_t depth,
                         Leave leave, std::vector<Timed>* done, std::vector<uint8_t>* out) {
  depth = std::clamp<uint32_t>(depth, 1, kMaxItemsInFlight);
  uint64_t used = 0;  // by the items finished in this call
  bool stop = false;  // a sticky error: nothing more goes to the GPU
  auto finish = [&] {
    finish_oldest(done, out);
    used += done->back().gpu_ns;
    stop = stop || is_sticky(done->back().result);
  };
  size_t n = 0;
  while (n < items.size() && !stop && (n == 0 || used < budget_ns)) {
    if (in_flight() >= depth) {
      finish();
      continue;
    }
    const ItemSpec& item = items[n];
    const size_t slot = issued_ % kMaxItemsInFlight;
    Timed& t = flight_[slot];
    t = {};
    flight_out_[slot] = 0;
    CUstream stream = CU_STREAM_LEGACY;
    // A stream that never carried work has no driver stream to destroy.
    const bool unmade =
        item.kind == wire::ItemKind::kDestroyStream && !streams_.count(item.stream.handle);
    CUresult recorded = unmade ? CUDA_SUCCESS : stream_for(item.stream, &stream);
    if (recorded == CUDA_SUCCESS) recorded = api_.cuEventRecord(slot_start_[slot], stream);
    if (recorded == CUDA_SUCCESS) {
      t.result = note(issue_item(item, stream));
      // A destroyed stream takes no more work: its end is timed on the
      // legacy stream, which waits for it.
      if (item.kind == wire::ItemKind::kDestroyStream) stream = CU_STREAM_LEGACY;
      recorded = api_.cuEventRecord(slot_end_[slot], stream);
    }
    ++issued_;
    ++n;
    if (recorded != CUDA_SUCCESS) {
      // Its end cannot be waited for: wait for the whole context instead.
      if (t.result == CUDA_SUCCESS) t.result = note(recorded);
      const CUresult drained = api_.cuCtxSynchronize();
      for (; finished_ < issued_; ++finished_) {
        const size_t k = finished_ % kMaxItemsInFlight;
        Timed f = flight_[k];
        if (f.result == CUDA_SUCCESS && drained != CUDA_SUCCESS) f.result = note(drained);
        done->push_back(f);
        take_out(k, f.result, out);
      }
      return n;
    }
    stop = stop || is_sticky(t.result);
  }
  const bool left = n < items.size() ? leave.when_cut : leave.at_end;
  if (!left || stop) finish_items(done, out);
  return n;
}

}  // namespace vgpu::executor::cuda
