// Batches of launches on the whole cuda backend (real worker processes, the
// FAKE driver with its modeled GPU): consecutive launches go to the worker in
// one message and stay in flight together, each still timed by its own
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
    REQUIRE(b.run(*gpu, {3'000'000, 1}) == 3);
    for (size_t i = 0; i < 3; ++i) check_charged(b.results[i], 1'000'000);
  }
  SECTION("depth 4: up to three more were already in flight, and they ran") {
    Batch b;
    for (int i = 0; i < 20; ++i) b.add(a.id, work_for(work, 1'000'000));
    REQUIRE(b.run(*gpu, {3'000'000, 4}) == 6);
    for (size_t i = 0; i < 6; ++i) check_charged(b.results[i], 1'000'000);
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

TEST_CASE("cuda batches: a batch that is not all ready launches runs its first item alone") {
  FakeGpu gpu;
  auto a = gpu.context(1);
  const Handle bump = gpu.function(a, kBump);
  uint64_t p = 0;
  REQUIRE(gpu->mem_alloc(a.id, 64, &p) == Status::kSuccess);
  Batch b;
  b.works.push_back({a.id, kDefaultStream, Memset{p, 64, 1}});
  b.add(a.id, launch(bump, Params{}.at(0, int32_t{1}).bytes));
  REQUIRE(b.run(*gpu, {UINT64_MAX, 4}) == 1);
  CHECK(b.results[0].status == Status::kSuccess);
}
