// The sim backend's batches: consecutive launches of a context go to the
// worker in one message (execute_batch) and behave as that many execute()
// calls would: in order, each with its own result, stopping at the budget,
// and a failure in the middle of a batch ending it where it would have ended.
#include "sim_test_support.h"

using namespace vgpu;
using namespace vgpu::executor;
using namespace vgpu::executor::test;

namespace {

struct Fixture {
  std::unique_ptr<Backend> b = make_backend();
  ContextId ctx = new_context(*b, 1);
  Handle module = 0;
  uint64_t counter = 0;  // g_counter, as bump_counter sees it

  Fixture() {
    const auto image = fixture_fatbin();
    REQUIRE(b->module_load(ctx, image, &module) == Status::kSuccess);
    REQUIRE(b->var_get(ctx, module, "g_counter", 4, &counter) == Status::kSuccess);
  }
  Handle fn(const char* name) {
    Handle f = 0;
    FunctionInfo info;
    REQUIRE(b->function_get(ctx, module, name, &f, &info) == Status::kSuccess);
    return f;
  }
  Work bump(int by) { return Work{ctx, kDefaultStream, launch(fn("_Z12bump_counteri"), Params(4).at(0, by).take())}; }
  Work slow(uint64_t ns) { return Work{ctx, kDefaultStream, launch(fn("_Z4slowy"), Params(8).at(0, ns).take())}; }
  Work crash(uint64_t where) { return Work{ctx, kDefaultStream, launch(fn("_Z5crashPi"), Params(8).at(0, where).take())}; }
  Work fail() { return Work{ctx, kDefaultStream, launch(fn("_Z4failv"), {})}; }
  Work no_impl() { return Work{ctx, kDefaultStream, launch(fn("_Z7no_impli"), Params(4).take())}; }
  Work traps() { return Work{ctx, kDefaultStream, launch(fn("_Z5trapsv"), {})}; }

  // Accepts all and runs them as a batch; the results of those that ran.
  // The worker also ends a batch after 1 ms of real time, which a loaded
  // machine reaches: then the rest run in the next one, as the dispatcher
  // runs them (unless the budget or a failure ended it).
  std::vector<ExecResult> run_batch(std::vector<Work>& works, uint64_t budget = ~uint64_t{0}) {
    std::vector<const Work*> ptrs;
    for (Work& w : works) {
      REQUIRE(b->accept(w) == Status::kSuccess);
      ptrs.push_back(&w);
    }
    std::vector<ExecResult> results(works.size());
    size_t done = 0;
    uint64_t spent = 0;  // modeled time of what ran, against `budget`
    while (done < works.size()) {
      const std::span<const Work* const> rest(ptrs.data() + done, ptrs.size() - done);
      const uint64_t left = budget == ~uint64_t{0} ? budget : budget - spent;
      const size_t ran = b->execute_batch(rest, {left, 1}, results.data() + done);
      REQUIRE(ran >= 1);
      REQUIRE(ran <= rest.size());
      for (size_t i = done; i < done + ran; ++i) spent += results[i].gpu_ns;
      done += ran;
      // The worker's real-time slice may also cut a batch (a loaded
      // machine): the dispatcher then goes on with what the budget leaves.
      if (budget != ~uint64_t{0}) {
        if (spent >= budget) break;
        continue;
      }
      // A failure that faulted the context ends the run (the rest would
      // only report the fault); one that did not (a kernel without an
      // implementation) does not, wherever the worker's real-time slice
      // happened to cut the batch.
      const Status q = b->stream_query(ctx, kDefaultStream);
      if (!ok(results[done - 1].status) && q != Status::kSuccess && q != Status::kNotReady) break;
    }
    for (size_t i = done; i < works.size(); ++i) b->discard(works[i]);
    results.resize(done);
    return results;
  }
  int value() { return get_value<int>(*b, ctx, counter); }
};

}  // namespace

TEST_CASE("sim batch: every launch runs, in order, each with its own result") {
  Fixture f;
  std::vector<Work> works;
  for (int i = 0; i < 100; ++i) works.push_back(f.bump(1));
  const auto results = f.run_batch(works);
  CHECK(results.size() == 100);
  uint64_t total = 0;
  for (const ExecResult& r : results) {
    CHECK(r.status == Status::kSuccess);
    total += r.gpu_ns;
  }
  CHECK(f.value() == 42 + 100);
  CHECK(total >= 100 * 5000);  // each at least its modeled 5 us
  CHECK(f.b->stream_query(f.ctx, kDefaultStream) == Status::kSuccess);  // nothing left pending
}

TEST_CASE("sim batch: it stops at the budget of modeled time; the rest stay accepted") {
  Fixture f;
  std::vector<Work> works;
  for (int i = 0; i < 10; ++i) works.push_back(f.slow(1'000'000));  // 1 ms each
  const auto results = f.run_batch(works, 2'500'000);
  CHECK(results.size() == 3);  // the third brings it past 2.5 ms
  for (const ExecResult& r : results) {
    CHECK(r.status == Status::kSuccess);
    CHECK(r.gpu_ns >= 900'000);
  }
}

TEST_CASE("sim batch: a kernel without an implementation fails alone") {
  Fixture f;
  std::vector<Work> works = {};
  works.push_back(f.bump(1));
  works.push_back(f.no_impl());
  works.push_back(f.bump(1));
  const auto results = f.run_batch(works);
  REQUIRE(results.size() == 3);
  CHECK(results[0].status == Status::kSuccess);
  CHECK(results[1].status == Status::kInvalidDeviceFunction);
  CHECK(results[2].status == Status::kSuccess);
  CHECK(f.value() == 44);
}

TEST_CASE("sim batch: an interpreted kernel's trap ends the batch and faults the context") {
  Fixture f;
  std::vector<Work> works;
  works.push_back(f.bump(1));
  works.push_back(f.traps());
  for (int i = 0; i < 5; ++i) works.push_back(f.bump(1));
  const auto results = f.run_batch(works);
  REQUIRE(results.size() == 2);  // the rest did not run
  CHECK(results[0].status == Status::kSuccess);
  CHECK(results[1].status == Status::kLaunchFailure);
}

TEST_CASE("sim batch: a plug-in error ends the batch and faults the context") {
  Fixture f;
  std::vector<Work> works;
  works.push_back(f.bump(1));
  works.push_back(f.fail());
  for (int i = 0; i < 5; ++i) works.push_back(f.bump(1));
  const auto results = f.run_batch(works);
  REQUIRE(results.size() == 2);  // the rest did not run
  CHECK(results[0].status == Status::kSuccess);
  CHECK(results[1].status == Status::kLaunchFailure);
  // What did not run would fail on the faulted context, and changed nothing.
  std::vector<const Work*> rest;
  for (size_t i = 2; i < works.size(); ++i) rest.push_back(&works[i]);
  std::vector<ExecResult> more(rest.size());
  CHECK(f.b->execute_batch(rest, {}, more.data()) == rest.size());
  for (const ExecResult& r : more) CHECK(r.status == Status::kLaunchFailure);
}

TEST_CASE("sim batch: a kernel that faults mid-batch: those before it ran, it and the rest fail") {
  Fixture f;
  std::vector<Work> works;
  for (int i = 0; i < 3; ++i) works.push_back(f.bump(1));
  works.push_back(f.crash(0x10));  // unmapped (not null: UBSan would end the worker first)
  for (int i = 0; i < 3; ++i) works.push_back(f.bump(1));
  const auto results = f.run_batch(works);
  REQUIRE(results.size() == works.size());
  for (int i = 0; i < 3; ++i) CHECK(results[i].status == Status::kSuccess);
  for (size_t i = 3; i < works.size(); ++i) CHECK(results[i].status == Status::kIllegalAddress);
  CHECK(f.b->stream_query(f.ctx, kDefaultStream) == Status::kIllegalAddress);  // sticky
}

TEST_CASE("sim batch: more launches than one packet holds run over several batches") {
  Fixture f;
  std::vector<Work> works;
  for (int i = 0; i < 300; ++i) works.push_back(f.bump(1));  // more than one batch holds
  std::vector<const Work*> ptrs;
  for (Work& w : works) {
    REQUIRE(f.b->accept(w) == Status::kSuccess);
    ptrs.push_back(&w);
  }
  std::vector<ExecResult> results(works.size());
  size_t done = 0;
  while (done < works.size()) {
    const size_t ran = f.b->execute_batch(std::span(ptrs).subspan(done), executor::BatchLimits{},
                                          results.data() + done);
    REQUIRE(ran >= 1);
    done += ran;
  }
  for (const ExecResult& r : results) CHECK(r.status == Status::kSuccess);
  CHECK(f.value() == 42 + 300);
}
