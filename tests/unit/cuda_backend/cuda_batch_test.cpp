// Batches on the whole cuda backend (real worker processes, the FAKE driver
// with its modeled GPU): consecutive launches, memsets, copies on and to the
// device, event records and waits go to the worker in one message and stay
// in flight together, each on its guest stream, each still timed by its own
// events; the budget and the depth bound how far past the budget a batch
// runs; a fault in flight reaches every launch after it.
#include <catch2/catch.hpp>

#include <vector>

#include "cuda_test_support.h"

using namespace vgpu;
using namespace vgpu::executor;
using namespace vgpu::test;

namespace {

constexpr const char* kWork = "work";  // takes its argument's ns of modeled GPU time

struct Batch {
  std::vector<Work> works;
  std::vector<const Work*> ptrs;
  std::vector<ExecResult> results;

  void add(ContextId ctx, Launch l) { works.push_back({ctx, kDefaultStream, std::move(l)}); }
  // Accepts all of it, as the dispatcher's queue does, and runs what the
  // backend takes of it in one call.
  size_t run(Backend& b, BatchLimits limits) {
    for (const Work& w : works) REQUIRE(b.accept(w) == Status::kSuccess);
    ptrs.clear();
    for (const Work& w : works) ptrs.push_back(&w);
    results.assign(works.size(), ExecResult{Status::kUnknown, 0});
    const size_t ran = b.execute_batch(ptrs, limits, results.data());
    for (size_t i = ran; i < works.size(); ++i) b.discard(works[i]);
    return ran;
  }
};

Launch work_for(Handle fn, uint64_t ns) { return launch(fn, Params{}.at(0, ns).bytes); }

// A launch's charge is its kernel's modeled time plus any moment the GPU
// waited for the worker to issue it (a loaded machine makes that longer: only
// the lower bound is tight).
void check_charged(const ExecResult& r, uint64_t ns) {
  CHECK(r.status == Status::kSuccess);
  CHECK(r.gpu_ns >= ns * 99 / 100);
  CHECK(r.gpu_ns <= ns + 50'000'000);
}

// How many of `results` finished before their charges reached `budget`,
// counting the one that reached it: where a batch stops issuing. (Charges
// include the worker's gaps, so on a loaded machine it may be fewer than the
// kernels' own times say.)
size_t reaching(const std::vector<ExecResult>& results, size_t n, uint64_t budget) {
  uint64_t used = 0;
  for (size_t i = 0; i < n; ++i) {
    used += results[i].gpu_ns;
    if (used >= budget) return i + 1;
  }
  return n;
}

}  // namespace

TEST_CASE("cuda batches: launches go together, in order, and each does its own work") {
  FakeGpu gpu;
  auto a = gpu.context(1);
  const Handle fill = gpu.function(a, kFill);
  uint64_t p = 0;
  REQUIRE(gpu->mem_alloc(a.id, 4 * 40, &p) == Status::kSuccess);
  Batch b;
  for (int32_t i = 0; i < 40; ++i) {
    b.add(a.id, launch(fill, Params{}.at(0, p + 4 * i).at(8, i * 3).at(12, int32_t{1}).bytes));
  }
  REQUIRE(b.run(*gpu, {UINT64_MAX, 4}) == 40);
  for (const ExecResult& r : b.results) CHECK(r.status == Status::kSuccess);
  int32_t back[40] = {};
  REQUIRE(run(*gpu, a.id, CopyDtoH{p, reinterpret_cast<uint8_t*>(back), sizeof back}).status ==
          Status::kSuccess);
  for (int i = 0; i < 40; ++i) CHECK(back[i] == i * 3);
}

TEST_CASE("cuda batches: each launch is charged its own time; the budget and depth bound the batch") {
  FakeGpu gpu;
  auto a = gpu.context(1);
  const Handle work = gpu.function(a, kWork);
  SECTION("depth 1: stops after the launch that reaches the budget") {
    Batch b;
    for (int i = 0; i < 20; ++i) b.add(a.id, work_for(work, 1'000'000));
    const size_t ran = b.run(*gpu, {3'000'000, 1});
    REQUIRE(ran <= 3);  // each takes at least 1 ms
    CHECK(ran == reaching(b.results, ran, 3'000'000));
    for (size_t i = 0; i < ran; ++i) check_charged(b.results[i], 1'000'000);
  }
  SECTION("depth 4: up to three more were already in flight, and they ran") {
    Batch b;
    for (int i = 0; i < 20; ++i) b.add(a.id, work_for(work, 1'000'000));
    const size_t ran = b.run(*gpu, {3'000'000, 4});
    REQUIRE(ran <= 6);
    CHECK(ran == reaching(b.results, ran, 3'000'000) + 3);
    for (size_t i = 0; i < ran; ++i) check_charged(b.results[i], 1'000'000);
  }
  SECTION("different lengths in flight together: each its own") {
    Batch b;
    const uint64_t ns[] = {200'000, 2'000'000, 50'000, 700'000};
    for (uint64_t n : ns) b.add(a.id, work_for(work, n));
    REQUIRE(b.run(*gpu, {UINT64_MAX, 16}) == 4);
    for (size_t i = 0; i < 4; ++i) check_charged(b.results[i], ns[i]);
  }
}

TEST_CASE("cuda batches: a fault in flight reaches every launch after it, and only its context") {
  FakeGpu gpu;
  auto a = gpu.context(1);
  auto other = gpu.context(2);
  const Handle bump = gpu.function(a, kBump);
  const Handle fault = gpu.function(a, kFault);
  Batch b;
  b.add(a.id, launch(bump, Params{}.at(0, int32_t{1}).bytes));
  b.add(a.id, launch(fault, Params{}.at(0, uint64_t{16}).bytes));
  for (int i = 0; i < 3; ++i) b.add(a.id, launch(bump, Params{}.at(0, int32_t{1}).bytes));
  REQUIRE(b.run(*gpu, {UINT64_MAX, 8}) == 5);
  // The fake reports a fault at the first wait after it is issued, which may
  // be the wait for a launch before it: from the first error on, all fail.
  size_t first = 0;
  while (first < 5 && ok(b.results[first].status)) ++first;
  REQUIRE(first <= 1);
  for (size_t i = first; i < 5; ++i) CHECK(b.results[i].status == Status::kIllegalAddress);
  CHECK(run(*gpu, a.id, Synchronize{}).status == Status::kIllegalAddress);  // sticky
  // The other tenant's batches go on.
  const Handle bump2 = gpu.function(other, kBump);
  Batch c;
  for (int i = 0; i < 5; ++i) c.add(other.id, launch(bump2, Params{}.at(0, int32_t{1}).bytes));
  REQUIRE(c.run(*gpu, {UINT64_MAX, 8}) == 5);
  for (const ExecResult& r : c.results) CHECK(r.status == Status::kSuccess);
}

TEST_CASE("cuda batches: an item a batch does not take runs alone") {
  FakeGpu gpu;
  auto a = gpu.context(1);
  const Handle bump = gpu.function(a, kBump);
  uint64_t p = 0;
  REQUIRE(gpu->mem_alloc(a.id, 64 * 1024, &p) == Status::kSuccess);
  std::vector<uint8_t> host(64 * 1024, 1);
  Batch b;
  b.works.push_back({a.id, kDefaultStream,
                     CopyDtoH{p, host.data(), host.size()}});  // larger than a batch carries
  b.add(a.id, launch(bump, Params{}.at(0, int32_t{1}).bytes));
  REQUIRE(b.run(*gpu, {UINT64_MAX, 4}) == 1);
  CHECK(b.results[0].status == Status::kSuccess);
  // A copy to the device larger than a batch carries goes through the staging area.
  CHECK_FALSE(gpu->batches(CopyHtoD{p, host.data(), host.size()}));
  CHECK(gpu->batches(CopyHtoD{p, host.data(), 16 * 1024}));
  CHECK(gpu->batches(CopyDtoH{p, host.data(), 16 * 1024}));
  CHECK_FALSE(gpu->batches(Synchronize{}));
  Batch c;
  c.works.push_back({a.id, kDefaultStream, CopyHtoD{p, host.data(), host.size()}});
  c.add(a.id, launch(bump, Params{}.at(0, int32_t{1}).bytes));
  REQUIRE(c.run(*gpu, {UINT64_MAX, 4}) == 1);
  CHECK(c.results[0].status == Status::kSuccess);
}

TEST_CASE(
    "cuda batches: memsets, copies on and to the device, event records and waits go with the "
    "launches") {
  FakeGpu gpu;
  auto a = gpu.context(1);
  const Handle fill = gpu.function(a, kFill);
  uint64_t p = 0, q = 0;
  REQUIRE(gpu->mem_alloc(a.id, 4096, &p) == Status::kSuccess);
  REQUIRE(gpu->mem_alloc(a.id, 4096, &q) == Status::kSuccess);
  Handle s1 = 0, s2 = 0, e1 = 0, e2 = 0;
  REQUIRE(gpu->stream_create(a.id, 0, 0, &s1) == Status::kSuccess);
  REQUIRE(gpu->stream_create(a.id, 1, 0, &s2) == Status::kSuccess);  // non-blocking
  REQUIRE(gpu->event_create(a.id, 0, &e1) == Status::kSuccess);
  REQUIRE(gpu->event_create(a.id, 0, &e2) == Status::kSuccess);
  std::vector<uint8_t> bytes(1000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7);
  Batch b;
  b.works.push_back({a.id, s1, RecordEvent{e1}});
  b.works.push_back({a.id, s1, Memset{p, 4096, 0}});
  b.works.push_back({a.id, s1, CopyHtoD{p + 16, bytes.data(), bytes.size()}});
  b.works.push_back({a.id, s1, CopyHtoD{p, nullptr, 0}});  // nothing to do, in its place
  b.works.push_back({a.id, s1, RecordEvent{e2}});
  b.works.push_back({a.id, s2, WaitEvent{e2}});
  b.works.push_back({a.id, s2, CopyDtoD{q, p, 4096}});
  b.works.push_back(
      {a.id, s2,
       launch(fill, Params{}.at(0, p).at(8, int32_t{-1}).at(12, int32_t{4}).bytes, 1, 4)});
  b.works.push_back({a.id, s1, DestroyStream{s1}});
  std::vector<uint8_t> small(1000, 0xee), tiny(3, 0xee);
  b.works.push_back({a.id, s2, CopyDtoH{q + 16, small.data(), small.size()}});
  b.works.push_back({a.id, s2, CopyDtoH{p, tiny.data(), tiny.size()}});
  REQUIRE(b.run(*gpu, {UINT64_MAX, 4}) == b.works.size());
  for (const ExecResult& r : b.results) CHECK(r.status == Status::kSuccess);
  CHECK(small == bytes);  // came back in the batch's reply
  CHECK(tiny == std::vector<uint8_t>(3, 0xff));
  std::vector<uint8_t> back(4096);
  REQUIRE(run(*gpu, a.id, CopyDtoH{q, back.data(), back.size()}).status == Status::kSuccess);
  CHECK(std::equal(bytes.begin(), bytes.end(), back.begin() + 16));  // q: p's bytes before the fill
  CHECK(back[0] == 0);
  REQUIRE(run(*gpu, a.id, CopyDtoH{p, back.data(), back.size()}).status == Status::kSuccess);
  CHECK(back[0] == 0xff);  // the fill came after the copy
  int64_t ns = -1;
  CHECK(gpu->event_elapsed(a.id, e1, e2, &ns) == Status::kSuccess);  // both recorded
  CHECK(ns >= 0);
  // The destroyed stream is gone from the tables; its handle is refused.
  CHECK(gpu->stream_query(a.id, s1) == Status::kInvalidResourceHandle);
  CHECK(gpu->stream_query(a.id, s2) == Status::kSuccess);
  // An item whose memory went after it was queued is refused in its turn, alone.
  const Work m{a.id, s2, Memset{q, 64, 1}};
  REQUIRE(gpu->accept(m) == Status::kSuccess);
  REQUIRE(run(*gpu, a.id, Free{q}).status == Status::kSuccess);
  const Work* one = &m;
  ExecResult r;
  REQUIRE(gpu->execute_batch({&one, 1}, {UINT64_MAX, 4}, &r) == 1);
  CHECK(r.status == Status::kInvalidValue);
}

namespace {

// Accepted launches of `work`, each taking `ns` of modeled GPU time.
std::vector<Work> accepted_work(Backend& b, ContextId ctx, Handle work, size_t n, uint64_t ns) {
  std::vector<Work> works;
  for (size_t i = 0; i < n; ++i) works.push_back({ctx, kDefaultStream, work_for(work, ns)});
  for (const Work& w : works) REQUIRE(b.accept(w) == Status::kSuccess);
  return works;
}

struct Issue {
  std::vector<const Work*> ptrs;
  std::vector<ExecResult> results;
  BatchRun run;
  Issue(const std::vector<Work>& works, size_t from, size_t to, size_t carried) {
    for (size_t i = from; i < to; ++i) ptrs.push_back(&works[i]);
    results.assign(ptrs.size(), ExecResult{Status::kUnknown, 0});
    run = BatchRun{ptrs, carried, results.data()};
  }
};

}  // namespace

TEST_CASE("cuda batches: the last launches may stay on the GPU; the context's next batch takes them along") {
  FakeGpu gpu;
  auto a = gpu.context(1);
  const Handle work = gpu.function(a, kWork);
  const std::vector<Work> works = accepted_work(*gpu, a.id, work, 13, 1'000'000);
  // More work follows: it answers once all ten are issued, four still running.
  Issue first(works, 0, 10, 0);
  gpu->issue_batch(first.run, {UINT64_MAX, 4, true, true}, nullptr);
  CHECK(first.run.finished == 6);
  CHECK(first.run.in_flight == 4);
  for (size_t i = 0; i < 6; ++i) check_charged(first.results[i], 1'000'000);
  CHECK(gpu->stream_query(a.id, kDefaultStream) == Status::kNotReady);
  // The four lead the next batch; nothing follows it, so it waits for all.
  Issue next(works, 6, 13, 4);
  gpu->issue_batch(next.run, {UINT64_MAX, 4, true, false}, nullptr);
  CHECK(next.run.finished == 7);
  CHECK(next.run.in_flight == 0);
  for (size_t i = 0; i < 7; ++i) check_charged(next.results[i], 1'000'000);
  CHECK(gpu->stream_query(a.id, kDefaultStream) == Status::kSuccess);
}

TEST_CASE("cuda batches: stopped by its budget a batch leaves up to depth - 1 running; finish_batch waits for them") {
  FakeGpu gpu;
  auto a = gpu.context(1);
  const Handle work = gpu.function(a, kWork);
  const std::vector<Work> works = accepted_work(*gpu, a.id, work, 20, 1'000'000);
  Issue batch(works, 0, 20, 0);
  gpu->issue_batch(batch.run, {3'000'000, 4, true, false}, nullptr);
  const size_t done = batch.run.finished;
  REQUIRE(done <= 3);
  CHECK(done == reaching(batch.results, done, 3'000'000));
  REQUIRE(batch.run.in_flight == 3);
  Issue rest(works, done, done + 3, 3);
  gpu->finish_batch(rest.run);
  CHECK(rest.run.finished == 3);
  for (size_t i = 0; i < 3; ++i) check_charged(rest.results[i], 1'000'000);
  for (size_t i = done + 3; i < works.size(); ++i) gpu->discard(works[i]);
  CHECK(gpu->stream_query(a.id, kDefaultStream) == Status::kSuccess);
}

TEST_CASE("cuda batches: another context's launches in flight end before the next batch is waited for; a hang among them is theirs") {
  FakeGpu gpu;
  auto a = gpu.context(1);
  auto b = gpu.context(2);
  const Handle hang = gpu.function(a, kHang);
  const Handle bump = gpu.function(b, kBump);
  std::vector<Work> hung{{a.id, kDefaultStream, launch(hang, Params{}.at(0, uint64_t{0}).bytes)}};
  REQUIRE(gpu->accept(hung[0]) == Status::kSuccess);
  Issue left(hung, 0, 1, 0);
  gpu->issue_batch(left.run, {UINT64_MAX, 4, true, true}, nullptr);
  REQUIRE(left.run.in_flight == 1);

  std::vector<Work> next;
  for (int i = 0; i < 3; ++i) next.push_back({b.id, kDefaultStream, launch(bump, Params{}.at(0, int32_t{1}).bytes)});
  for (const Work& w : next) REQUIRE(gpu->accept(w) == Status::kSuccess);
  Issue theirs(next, 0, 3, 0);
  Issue tail(hung, 0, 1, 1);
  gpu->issue_batch(theirs.run, {UINT64_MAX, 4, false, false}, &tail.run);
  CHECK(tail.run.finished == 1);
  CHECK(tail.results[0].status == Status::kLaunchTimeout);  // the watchdog found it, on its own context
  REQUIRE(theirs.run.finished == 3);
  for (const ExecResult& r : theirs.results) CHECK(r.status == Status::kSuccess);
  CHECK(run(*gpu, a.id, Synchronize{}).status == Status::kLaunchTimeout);
  CHECK(run(*gpu, b.id, Synchronize{}).status == Status::kSuccess);
}
