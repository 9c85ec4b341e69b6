// The PTX interpreter on what classes use beyond the basics: half precision, packed dot
// products, warp votes/matches/reductions that must wait for their lanes, __managed__
// variables and the device heap (malloc/new in kernels). Kernels from kernels.cu.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "ptx/ptx_exec.h"
#include "ptx_test_support.h"

using namespace vgpu::executor::sim::ptx;
using namespace vgpu::executor::sim::ptx::test;

TEST_CASE("half precision: scalar and f16x2 arithmetic, rounded to half as a GPU does") {
  using h16 = _Float16;  // the host compiler's IEEE half: the reference rounding
  constexpr int n = 32;
  std::vector<h16> a(n), b(n), out(n);
  std::vector<float> f(128, -1);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<h16>(static_cast<float>(i) * 0.5f - 4.0f);
    b[i] = static_cast<h16>(1.25f + static_cast<float>(i % 4) * 0.75f);
  }
  REQUIRE_OK(launch("half_math", {1, 1, 1}, {n, 1, 1}, Params().add(a.data()).add(b.data()).add(out.data()).add(f.data())));
  auto half = [](float v) { return static_cast<float>(static_cast<h16>(v)); };
  for (int i = 0; i < n; ++i) {
    const float x = static_cast<float>(a[i]), y = static_cast<float>(b[i]);
    INFO("lane " << i << ": x " << x << ", y " << y);
    CHECK(static_cast<float>(out[i]) == half(x * y + half(x + y)));  // __hfma(x, y, __hadd(x, y))
    const float s = half(x + y);                                      // __hadd2 lanes (equal)
    CHECK(f[2 * i] == half(s * y + half(x * x)));                     // low lanes: p = x, q = y
    CHECK(f[2 * i + 1] == half(s * x + half(y * y)));                 // high lanes: p = y, q = x
    CHECK(f[64 + i] == std::max(x, y) + (x < y ? 100.0f : 0.0f));
    CHECK(f[96 + i] == half(x * 0.5f) + 10.0f * -2.25f);
  }
}

TEST_CASE("a lane that skipped a partial-mask vote waits at the next full-warp vote for the others") {
  std::vector<int> out(64, 0);
  std::vector<unsigned> ballots(64, 0);
  REQUIRE_OK(launch("vote_after_partial", {1, 1, 1}, {64, 1, 1}, Params().add(out.data()).add(ballots.data())));
  for (int i = 0; i < 64; ++i) {
    INFO("thread " << i);
    CHECK(out[i] == (i % 32 == 0 ? -9 : 11));  // any: lane 5 voted yes, lane 0 included
    CHECK(ballots[i] == 0xaaaaaaaau);
  }
}

TEST_CASE("a __managed__ variable is reached through symbol_address like a __device__ one") {
  unsigned hits = 7;
  Environment env;
  env.symbol_address = [&](std::string_view name) -> uint64_t { return name == "m_hits" ? (uint64_t)&hits : 0; };
  REQUIRE_OK(launch("count_managed", {3, 1, 1}, {50, 1, 1}, Params(), env));
  CHECK(hits == 157);
}

TEST_CASE("match.any, match.all and redux compute over the warp's lanes") {
  constexpr int n = 32;
  std::vector<int> in(n);
  for (int i = 0; i < n; ++i) in[i] = (i * 7) % 5;  // five classes of lanes
  std::vector<unsigned> out(9 * n, 0xAB);
  REQUIRE_OK(launch("match_kernel", {1, 1, 1}, {n, 1, 1}, Params().add(in.data()).add(out.data())));
  unsigned sum = 0, mx = 0, an = ~0u, orr = 0, xr = 0;
  int mn = 1 << 30;
  for (int v : in) {
    sum += (unsigned)v; mx = std::max(mx, (unsigned)v); an &= (unsigned)v | 0x100u; orr |= (unsigned)v; xr ^= (unsigned)v;
    mn = std::min(mn, v - 5);
  }
  for (int i = 0; i < n; ++i) {
    INFO("lane " << i);
    unsigned same = 0;
    for (int j = 0; j < n; ++j) if (in[j] == in[i]) same |= 1u << j;
    CHECK(out[i] == same);
    CHECK(out[n + i] == 0);      // in[i] & 1 differs between lanes
    CHECK(out[2 * n + i] == 0);  // so the predicate is false
    CHECK(out[3 * n + i] == sum);
    CHECK(static_cast<int>(out[4 * n + i]) == mn);
    CHECK(out[5 * n + i] == mx);
    CHECK(out[6 * n + i] == an);
    CHECK(out[7 * n + i] == orr);
    CHECK(out[8 * n + i] == xr);
  }
  // Every lane equal: match.all gives the whole warp and a true predicate.
  std::fill(in.begin(), in.end(), 4);
  REQUIRE_OK(launch("match_kernel", {1, 1, 1}, {n, 1, 1}, Params().add(in.data()).add(out.data())));
  CHECK(out[n] == 0xffffffffu);
  CHECK(out[2 * n] == 1);
  CHECK(out[3 * n] == 4u * n);
}

TEST_CASE("malloc, free, new and delete in kernels use the environment's device heap") {
  std::map<uint64_t, std::vector<uint8_t>> blocks;  // what a heap gave out
  uint64_t freed = 0;
  Environment env;
  env.heap_alloc = [&](uint64_t bytes) -> uint64_t {
    if (bytes > 4096) return 0;  // a full heap
    std::vector<uint8_t> b(bytes);
    const uint64_t a = reinterpret_cast<uint64_t>(b.data());
    blocks[a] = std::move(b);
    return a;
  };
  env.heap_free = [&](uint64_t address) { freed += blocks.erase(address); };
  constexpr int threads = 8;
  std::vector<int*> slots(threads, nullptr);
  std::vector<long long> out(2 * threads, 0);
  REQUIRE_OK(launch("heap_fill", {1, 1, 1}, {threads, 1, 1}, Params().add(slots.data()).add(10), env));
  CHECK(blocks.size() == threads);
  REQUIRE_OK(launch("heap_sum", {1, 1, 1}, {threads, 1, 1}, Params().add(slots.data()).add(10).add(out.data()), env));
  for (int i = 0; i < threads; ++i) {
    CHECK(out[i] == 10LL * i * 1000 + 45);
    CHECK(out[threads + i] == i + 7);
  }
  CHECK(freed == 2 * threads);  // the malloc'd blocks and the new[]'d ones
  CHECK(blocks.empty());
  // A full heap: malloc returns null, as on a GPU.
  REQUIRE_OK(launch("heap_fill", {1, 1, 1}, {threads, 1, 1}, Params().add(slots.data()).add(2000), env));
  for (int* s : slots) CHECK(s == nullptr);
  // Without a heap the kernel is refused by name before it runs.
  const Result r = launch("heap_fill", {1, 1, 1}, {threads, 1, 1}, Params().add(slots.data()).add(10));
  CHECK(r.outcome == Outcome::kUnsupported);
  CHECK_THAT(r.message, Catch::Contains("malloc"));
}

TEST_CASE("dp4a and dp2a: packed byte and half dot products, signed and unsigned") {
  constexpr int n = 16;
  std::vector<int> a(n), b(n), out(4 * n, 0);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<int>(0x9d7f80f1u * static_cast<unsigned>(i + 1));
    b[i] = static_cast<int>(0x12c3ff7eu ^ static_cast<unsigned>(i * 0x01010101));
  }
  REQUIRE_OK(launch("dot_products", {1, 1, 1}, {n, 1, 1}, Params().add(a.data()).add(b.data()).add(out.data())));
  auto sb = [](int v, int k) { return static_cast<int>(static_cast<int8_t>(static_cast<unsigned>(v) >> (8 * k))); };
  auto ub = [](int v, int k) { return static_cast<int>(static_cast<uint8_t>(static_cast<unsigned>(v) >> (8 * k))); };
  auto sh = [](int v, int k) { return static_cast<int>(static_cast<int16_t>(static_cast<unsigned>(v) >> (16 * k))); };
  for (int i = 0; i < n; ++i) {
    INFO("element " << i);
    int s4 = 100, lo = -3, hi = 5;
    unsigned u4 = 7;
    for (int k = 0; k < 4; ++k) {
      s4 += sb(a[i], k) * sb(b[i], k);
      u4 += static_cast<unsigned>(ub(a[i], k) * ub(b[i], k));
    }
    for (int k = 0; k < 2; ++k) {
      lo += sh(a[i], k) * sb(b[i], k);
      hi += sh(a[i], k) * sb(b[i], 2 + k);
    }
    CHECK(out[4 * i] == s4);
    CHECK(static_cast<unsigned>(out[4 * i + 1]) == u4);
    CHECK(out[4 * i + 2] == lo);
    CHECK(out[4 * i + 3] == hi);
  }
}

TEST_CASE("cooperative launches: grid.sync() holds every block until all arrive, again and again") {
  constexpr uint32_t blocks = 6, threads = 96, n = blocks * threads;
  constexpr int rounds = 5;
  std::vector<int> data(n, -1), out(n, -1);
  const Params params = Params().add(data.data()).add(out.data()).add(rounds);
  Launch l{{blocks, 1, 1}, {threads, 1, 1}, 0, params.bytes.data(), params.bytes.size()};
  l.cooperative = true;
  REQUIRE_OK(run(program(), "grid_rotate", l, {}));
  // Each round moves every value one place down, across block boundaries.
  for (uint32_t r = 0; r < n; ++r) {
    INFO("thread " << r);
    CHECK(out[r] == static_cast<int>((r + rounds) % n));
  }

  // Not launched cooperatively, the grid has no workspace: cooperative groups traps, as on a GPU.
  l.cooperative = false;
  const Result plain = run(program(), "grid_rotate", l, {});
  CHECK(plain.outcome == Outcome::kTrap);

  // A grid larger than the device holds resident is refused before it runs.
  Launch big{{1024, 1, 1}, {1024, 1, 1}, 0, params.bytes.data(), params.bytes.size()};
  big.cooperative = true;
  CHECK(run(program(), "grid_rotate", big, {}).outcome == Outcome::kBadLaunch);
}

TEST_CASE("a shuffle from a lane outside the member mask reads 0, so partial-warp sums come out right") {
  std::vector<int> in(32);
  for (int i = 0; i < 32; ++i) in[i] = 1000 * (i + 1);  // lanes 8..31 must not count
  int out = -1;
  REQUIRE_OK(launch("partial_mask_sum", {1, 1, 1}, {32, 1, 1}, Params().add(in.data()).add(&out)));
  CHECK(out == 1000 * (1 + 2 + 3 + 4 + 5 + 6 + 7 + 8));
}

TEST_CASE("CTAs on several host threads: blocks start in order, atomics are atomic, printf is whole") {
  // More host threads than this machine may have cores: the threads interleave at any point.
  constexpr unsigned kHostThreads = 4;
  constexpr uint32_t blocks = 96, threads = 128, n = blocks * threads;
  static_assert(n >= kParallelThreads);
  std::vector<int> in(n);
  for (uint32_t i = 0; i < n; ++i) in[i] = static_cast<int>(i % 1000) - 300;
  std::vector<int> flags(blocks, 0);
  std::vector<long long> totals(blocks, -1);
  Params chain = Params().add(in.data()).add(flags.data()).add(totals.data());
  Launch l{{blocks, 1, 1}, {threads, 1, 1}, 0, chain.bytes.data(), chain.bytes.size()};
  l.host_threads = kHostThreads;
  REQUIRE_OK(run(program(), "chained_blocks", l, {}));
  long long sum = 0;
  for (uint32_t b = 0; b < blocks; ++b) {
    for (uint32_t t = 0; t < threads; ++t) sum += in[b * threads + t];
    INFO("block " << b);
    CHECK(totals[b] == sum);
  }

  for (int round = 0; round < 3; ++round) {
    unsigned long long wide = 0;
    int word = 0, printed_blocks = 0;
    unsigned short halves[2] = {0, 0x5a5a};
    std::mutex mu;
    std::vector<std::string> printed;
    Environment env;
    env.print = [&](std::string_view s) {
      // The environment is called one thread at a time: a second caller inside would show.
      if (!mu.try_lock()) FAIL("two interpreter threads called print at once");
      printed.emplace_back(s);
      mu.unlock();
    };
    Params p = Params().add(&wide).add(&word).add(&halves[0]).add(&printed_blocks);
    Launch c{{blocks, 1, 1}, {threads, 1, 1}, 0, p.bytes.data(), p.bytes.size()};
    c.host_threads = kHostThreads;
    REQUIRE_OK(run(program(), "counters", c, env));
    CHECK(wide == 3ull * n);
    CHECK(word == static_cast<int>(n));
    CHECK(halves[0] == static_cast<unsigned short>(n));
    CHECK(halves[1] == 0x5a5a);
    CHECK(printed.size() == blocks / 16);
    CHECK(printed_blocks == static_cast<int>(blocks / 16));
  }
}

TEST_CASE("a trap in CTAs on several host threads fails the launch with the first CTA's") {
  std::vector<int> v(128, 1);
  v[56] = 500;  // assert_kernel checks v[threadIdx.x] < 3: every block traps
  Params p = Params().add(v.data());
  Launch l{{64, 1, 1}, {128, 1, 1}, 0, p.bytes.data(), p.bytes.size()};
  l.host_threads = 3;
  const Result r = run(program(), "assert_kernel", l, {});
  CHECK(r.outcome == Outcome::kTrap);
  CHECK_THAT(r.message, Catch::Contains("block [0,0,0], thread [56,0,0]"));
}

TEST_CASE("cp.async copies global to shared memory: zero fill, ignore-src, cache hints, groups") {
  const Program& p = program_sm80();
  constexpr int n = 1000, threads = 256, blocks = (n + threads - 1) / threads;
  std::vector<float> in(n), out(blocks * threads, -1.f);
  for (int i = 0; i < n; ++i) in[i] = static_cast<float>(i) + 0.5f;
  Params staged = Params().add(in.data()).add(out.data()).add(n);
  Launch l{{blocks, 1, 1}, {threads, 1, 1}, 0, staged.bytes.data(), staged.bytes.size()};
  REQUIRE_OK(run(p, "staged_reverse", l, {}));
  for (int i = 0; i < blocks * threads; ++i) {
    const int block = i / threads, from = block * threads + (threads - 1 - i % threads);
    INFO("element " << i);
    CHECK(out[i] == (from < n ? in[from] * 2 : 0.f));  // past n: the zero-filled slot
  }

  std::vector<int> tiles(3 * 512), reversed(3 * 512, -1);
  for (size_t i = 0; i < tiles.size(); ++i) tiles[i] = static_cast<int>(i * 7);
  Params group = Params().add(tiles.data()).add(reversed.data());
  Launch g{{3, 1, 1}, {512, 1, 1}, 0, group.bytes.data(), group.bytes.size()};
  REQUIRE_OK(run(p, "group_copy", g, {}));
  for (int b = 0; b < 3; ++b)
    for (int t = 0; t < 512; ++t) CHECK(reversed[b * 512 + t] == tiles[b * 512 + 511 - t]);

  for (int skip : {0, 1}) {
    struct alignas(16) Quad { int v[4]; };
    Quad src{{1, 2, 3, 4}}, dst[2] = {{{-1, -1, -1, -1}}, {{-1, -1, -1, -1}}};
    Params forms = Params().add(&src).add(&dst[0]).add(skip);
    Launch f{{1, 1, 1}, {1, 1, 1}, 0, forms.bytes.data(), forms.bytes.size()};
    REQUIRE_OK(run(p, "async_forms", f, {}));
    INFO("ignore-src " << skip);
    for (int k = 0; k < 4; ++k) {
      CHECK(dst[0].v[k] == k + 1);             // with a cache policy
      CHECK(dst[1].v[k] == (skip ? 0 : k + 1));  // ignore-src set: zeros
    }
  }
}

TEST_CASE("a thread spinning on what a later thread of its block writes lets that thread run") {
  std::vector<int> out(3, -1);
  REQUIRE_OK(launch("wait_for_later_thread", {3, 1, 1}, {64, 1, 1}, Params().add(out.data())));
  CHECK(out == std::vector<int>{42, 43, 44});
}

TEST_CASE("warp-synchronous volatile code: every lane's access lands before the next one") {
  constexpr unsigned blocks = 6, threads = 128, n = blocks * threads * 8;
  std::vector<int> in(n), out(blocks, 0);
  for (unsigned i = 0; i < n; ++i) in[i] = static_cast<int>(i % 97) - 40;
  std::vector<int> want(blocks, 0);
  for (unsigned i = 0; i < n; ++i) want[i / (threads * 8)] += in[i];
  REQUIRE_OK(launch("reduce_unrolled_last_warp", {blocks, 1, 1}, {threads, 1, 1},
                    Params().add(in.data()).add(out.data()).add(n)));
  CHECK(out == want);
}

TEST_CASE("mbarrier: cuda::barrier with memcpy_async, parity waits, pending counts, arrive_drop") {
  const Program& p = program_sm80();
  constexpr int blocks = 3, threads = 256;
  std::vector<int> in(blocks * threads), out(blocks * threads, -1);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i * 3);
  Params rounds = Params().add(in.data()).add(out.data());
  Launch l{{blocks, 1, 1}, {threads, 1, 1}, 0, rounds.bytes.data(), rounds.bytes.size()};
  REQUIRE_OK(run(p, "barrier_rounds", l, {}));
  for (int b = 0; b < blocks; ++b) {
    for (int t = 0; t < threads; ++t) {
      // v = reversed copy; then twice: v = neighbour's v + 1.
      const int from = b * threads + (threads - 1 - (t + 2) % threads);
      INFO("block " << b << ", thread " << t);
      CHECK(out[b * threads + t] == in[from] + 2);
    }
  }

  constexpr int n = 96;
  std::vector<unsigned> pending(n, 0);
  std::vector<int> passed(n, 0);
  Params forms = Params().add(pending.data()).add(passed.data());
  Launch f{{1, 1, 1}, {n, 1, 1}, 0, forms.bytes.data(), forms.bytes.size()};
  REQUIRE_OK(run(p, "barrier_forms", f, {}));
  // Each arrival saw the count still pending before it: n, n-1, ..., 1 in some order.
  std::vector<unsigned> sorted = pending;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < n; ++i) CHECK(sorted[i] == static_cast<unsigned>(i + 1));
  for (int i = 0; i < n; ++i) CHECK(passed[i] == (i % 2 == 0 ? 1 : 0));

  // Bulk copies completing on a barrier's transaction count, the copy before or after the
  // bytes are expected; a phase waits for its bytes as for its arrivals.
  std::vector<int> source(2 * threads), copied(2 * threads, -1);
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<int>(i * 11 + 5);
  Params bulk = Params().add(source.data()).add(copied.data());
  Launch b{{1, 1, 1}, {threads, 1, 1}, 0, bulk.bytes.data(), bulk.bytes.size()};
  REQUIRE_OK(run(p, "bulk_copies", b, {}));
  for (int i = 0; i < threads; ++i) {
    INFO("element " << i);
    CHECK(copied[i] == source[threads - 1 - i]);                    // expected before the copy
    CHECK(copied[threads + i] == source[2 * threads - 1 - i]);      // copied before expected
  }
  std::vector<int> open_then_complete(2, -1);
  Params pending_bytes = Params().add(open_then_complete.data());
  Launch one{{1, 1, 1}, {1, 1, 1}, 0, pending_bytes.bytes.data(), pending_bytes.bytes.size()};
  REQUIRE_OK(run(p, "bytes_pending", one, {}));
  CHECK(open_then_complete == std::vector<int>{0, 1});
}

TEST_CASE("mbarrier forms the interpreter does not run are refused by name; misuse traps") {
  const std::string head = ".version 8.0\n.target sm_90\n.address_size 64\n"
                           ".visible .entry k() {\n.shared .align 8 .b64 bar;\n.reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n"
                           "mov.u32 %r1, bar;\n";
  auto run_text = [](const std::string& text) {
    std::string why;
    auto prog = parse(text, &why);
    INFO(why);
    REQUIRE(prog);
    return run(*prog, "k", Launch{{1, 1, 1}, {32, 1, 1}, 0, nullptr, 0}, {});
  };
  // A bulk copy multicast to a cluster's CTAs.
  Result r = run_text(head + "mbarrier.init.shared.b64 [%r1], 1;\n"
                             "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                             " [%r1], [%rd1], 16, [%r1], 3;\nret;\n}\n");
  CHECK(r.outcome == Outcome::kUnsupported);
  CHECK_THAT(r.message, Catch::Contains("multicast::cluster"));
  // A bulk copy of a size that is not a multiple of 16.
  r = run_text(head + "mbarrier.init.shared.b64 [%r1], 1;\nmov.u64 %rd1, 4096;\n"
                      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 12, [%r1];\nret;\n}\n");
  CHECK(r.outcome == Outcome::kTrap);
  CHECK_THAT(r.message, Catch::Contains("not a multiple of 16"));
  // An arrival on an object never initialised, and more arrivals than a phase expects.
  r = run_text(head + "mbarrier.arrive.shared.b64 %rd1, [%r1];\nret;\n}\n");
  CHECK(r.outcome == Outcome::kTrap);
  CHECK_THAT(r.message, Catch::Contains("before mbarrier.init"));
  r = run_text(head + "mbarrier.init.shared.b64 [%r1], 32;\nmbarrier.inval.shared.b64 [%r1];\n"
                      "mbarrier.arrive.shared.b64 %rd1, [%r1];\nret;\n}\n");
  CHECK(r.outcome == Outcome::kTrap);
  CHECK_THAT(r.message, Catch::Contains("after mbarrier.inval"));
  r = run_text(head + "mbarrier.init.shared.b64 [%r1], 4;\nmbarrier.arrive.shared.b64 %rd1, [%r1], 5;\nret;\n}\n");
  CHECK(r.outcome == Outcome::kTrap);
  CHECK_THAT(r.message, Catch::Contains("arrival of 5 where 4 are pending"));
}
