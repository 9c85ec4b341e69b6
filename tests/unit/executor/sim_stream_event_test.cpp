// The sim backend's streams and events: handles, pending work, timing.
#include <algorithm>
#include <thread>

#include "sim_test_support.h"

using namespace vgpu;
using namespace vgpu::executor;
using namespace vgpu::executor::test;

namespace {
constexpr uint32_t kDisableTiming = 0x2;
}

TEST_CASE("sim: handles are never 0, 1 or 2 and mean nothing in another context") {
  auto b = make_backend();
  const ContextId c1 = new_context(*b, 1);
  const ContextId c2 = new_context(*b, 1);
  std::vector<Handle> seen;
  for (int i = 0; i < 20; ++i) {
    Handle s = 0, e = 0;
    REQUIRE(b->stream_create(c1, 0, 0, &s) == Status::kSuccess);
    REQUIRE(b->event_create(c1, 0, &e) == Status::kSuccess);
    CHECK(s > 2);
    CHECK(e > 2);
    seen.push_back(s);
    seen.push_back(e);
  }
  std::sort(seen.begin(), seen.end());
  CHECK(std::adjacent_find(seen.begin(), seen.end()) == seen.end());
  Handle s = 0, e = 0;
  REQUIRE(b->stream_create(c1, 1, -100, &s) == Status::kSuccess);  // priority clamped
  REQUIRE(b->event_create(c1, 0, &e) == Status::kSuccess);
  CHECK(b->stream_query(c2, s) == Status::kInvalidResourceHandle);
  CHECK(b->event_query(c2, e) == Status::kInvalidResourceHandle);
  CHECK(b->accept(Work{c2, s, Synchronize{}}) == Status::kInvalidResourceHandle);
  CHECK(b->accept(Work{c2, kDefaultStream, RecordEvent{e}}) == Status::kInvalidResourceHandle);
  // The default stream, under its three names.
  for (Handle d : {Handle{0}, Handle{1}, Handle{2}}) {
    CHECK(b->stream_query(c2, d) == Status::kSuccess);
  }
  CHECK(b->stream_create(c1, 0x4, 0, &s) == Status::kInvalidValue);
  CHECK(b->event_create(c1, 0x4, &e) == Status::kInvalidValue);  // interprocess needs DisableTiming
  CHECK(b->event_create(c1, 0x100, &e) == Status::kInvalidValue);
}

TEST_CASE("sim: a stream is not ready while accepted work has not executed") {
  auto b = make_backend();
  const ContextId ctx = new_context(*b, 1);
  const uint64_t p = alloc(*b, ctx, 4096);
  Handle s = 0;
  REQUIRE(b->stream_create(ctx, 0, 0, &s) == Status::kSuccess);
  CHECK(b->stream_query(ctx, s) == Status::kSuccess);

  const Work w1{ctx, s, Memset{p, 4096, 1}};
  const Work w2{ctx, s, Memset{p, 4096, 2}};
  REQUIRE(b->accept(w1) == Status::kSuccess);
  REQUIRE(b->accept(w2) == Status::kSuccess);
  CHECK(b->stream_query(ctx, s) == Status::kNotReady);
  CHECK(b->stream_query(ctx, kDefaultStream) == Status::kSuccess);
  CHECK(b->execute(w1).status == Status::kSuccess);
  CHECK(b->stream_query(ctx, s) == Status::kNotReady);
  b->discard(w2);
  CHECK(b->stream_query(ctx, s) == Status::kSuccess);
  CHECK(get_value<uint8_t>(*b, ctx, p) == 1);  // the discarded memset never ran

  // Destroying: no new work once queued; gone once executed.
  const Work destroy{ctx, kDefaultStream, DestroyStream{s}};
  REQUIRE(b->accept(destroy) == Status::kSuccess);
  CHECK(b->accept(Work{ctx, s, Synchronize{}}) == Status::kInvalidResourceHandle);
  CHECK(b->accept(destroy) == Status::kInvalidResourceHandle);
  CHECK(b->execute(destroy).status == Status::kSuccess);
  CHECK(b->stream_query(ctx, s) == Status::kInvalidResourceHandle);
  CHECK(b->accept(Work{ctx, kDefaultStream, DestroyStream{kDefaultStream}}) ==
        Status::kInvalidResourceHandle);
}

TEST_CASE("sim: events record the engine's time; elapsed time between completed events") {
  auto b = make_backend();
  const ContextId ctx = new_context(*b, 1);
  Handle e1 = 0, e2 = 0, untimed = 0;
  REQUIRE(b->event_create(ctx, 0, &e1) == Status::kSuccess);
  REQUIRE(b->event_create(ctx, 0, &e2) == Status::kSuccess);
  REQUIRE(b->event_create(ctx, kDisableTiming, &untimed) == Status::kSuccess);
  int64_t ns = 0;
  CHECK(b->event_query(ctx, e1) == Status::kSuccess);  // never recorded: complete
  CHECK(b->event_elapsed(ctx, e1, e2, &ns) == Status::kInvalidResourceHandle);

  const Work r1{ctx, kDefaultStream, RecordEvent{e1}};
  REQUIRE(b->accept(r1) == Status::kSuccess);
  CHECK(b->event_query(ctx, e1) == Status::kNotReady);
  CHECK(b->execute(r1).status == Status::kSuccess);
  CHECK(b->event_query(ctx, e1) == Status::kSuccess);
  CHECK(b->event_elapsed(ctx, e1, e2, &ns) == Status::kInvalidResourceHandle);  // e2 never

  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const Work r2{ctx, kDefaultStream, RecordEvent{e2}};
  REQUIRE(b->accept(r2) == Status::kSuccess);
  CHECK(b->event_elapsed(ctx, e1, e2, &ns) == Status::kNotReady);
  REQUIRE(b->execute(r2).status == Status::kSuccess);
  REQUIRE(b->event_elapsed(ctx, e1, e2, &ns) == Status::kSuccess);
  CHECK(ns >= 5'000'000);
  CHECK(ns < 5'000'000'000);
  REQUIRE(b->event_elapsed(ctx, e2, e1, &ns) == Status::kSuccess);
  CHECK(ns <= -5'000'000);

  REQUIRE(run(*b, ctx, RecordEvent{untimed}).status == Status::kSuccess);
  CHECK(b->event_query(ctx, untimed) == Status::kSuccess);
  CHECK(b->event_elapsed(ctx, e1, untimed, &ns) == Status::kInvalidResourceHandle);

  // Waits and synchronizations execute in order: nothing left to wait for.
  CHECK(run(*b, ctx, WaitEvent{e1}).status == Status::kSuccess);
  CHECK(run(*b, ctx, Synchronize{}).status == Status::kSuccess);
  CHECK(run(*b, ctx, DestroyEvent{e1}).status == Status::kSuccess);
  CHECK(b->event_query(ctx, e1) == Status::kInvalidResourceHandle);
  CHECK(b->accept(Work{ctx, kDefaultStream, WaitEvent{e1}}) == Status::kInvalidResourceHandle);
}
