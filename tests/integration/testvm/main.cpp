// vgpu-test-vm: a simulated VM that speaks the wire protocol itself, for the
// robustness tests (tests/integration/hostile_test.cpp and friends). Modes:
//
//   fields   well-framed requests whose fields lie (attacks.h), for SECONDS,
//            mixed with honest ones; every one must be answered, the attacks
//            with errors, and the channel must stay open
//   framing  a fresh channel per attack that breaks the ring rules; the
//            daemon must close each one
//   slots    a real VM's guest kernel over an ivshmem-plain region file
//            (--region): clients made up on a slot still held must be refused
//   honest   request/reply round trips with their data checked; every
//            request answered exactly once
//   flood    as many queued requests (quiet memsets) as it can send
//   noread   requests whose replies it never reads, then it holds on
//   bomb     module loads that cost the host as much as it allows (module_bomb.h)
//   latency  one inline call (GetDeviceCount) after another for SECONDS: how
//            many, the slowest and p50/p99 (what holds up the host's loop
//            shows here); paced and with checked copies if asked
//
// It prints "key value" lines, then "RESULT ok" (exit 0) or "RESULT fail: why".
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "attacks.h"
#include "channel.h"
#include "module_bomb.h"
#include "pipeline.h"
#include "vgpu/protocol/vm_region.h"

using namespace vgpu;
using namespace vgpu::testvm;
using namespace vgpu::proto;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string mode, socket, vm = "test-vm", region;
  double seconds = 5;
  uint64_t foreign = 0;
  uint64_t seed = 0;
  int count = 100;
  int interval_us = 0;       // latency: pause between calls
  int round_trip_every = 0;  // latency: a checked copy round trip every Nth call
};

int fail(const std::string& why) {
  std::printf("RESULT fail: %s\n", why.c_str());
  return 1;
}

void print_tally(const Tally& t) {
  std::printf("sent_honest %llu\nsent_malformed %llu\nsent_refused %llu\n",
              static_cast<unsigned long long>(t.sent[0]), static_cast<unsigned long long>(t.sent[1]),
              static_cast<unsigned long long>(t.sent[2]));
  std::printf("replies %llu\nunexpected %llu\nwrong %llu\nlost %llu\n",
              static_cast<unsigned long long>(t.replies), static_cast<unsigned long long>(t.unexpected),
              static_cast<unsigned long long>(t.wrong), static_cast<unsigned long long>(t.lost));
  for (const auto& [what, n] : t.wrong_by_what) {
    std::printf("wrong_reply %s x%llu\n", what.c_str(), static_cast<unsigned long long>(n));
  }
}

bool tally_clean(const Tally& t) { return t.unexpected == 0 && t.wrong == 0 && t.lost == 0; }

std::function<std::vector<uint8_t>(uint64_t)> make(auto r) {
  return [r](uint64_t id) { return request(id, r); };
}

bool malloc_one(Pipeline& p, uint64_t size, uint64_t* dptr) {
  std::vector<uint8_t> reply;
  if (!p.call(make(MallocRequest{size}), "Malloc", &reply) || reply.size() != 8) return false;
  std::memcpy(dptr, reply.data(), 8);
  return true;
}

// Bytes to the device and back through the data area, checked.
bool round_trip(Pipeline& p, Channel& ch, uint64_t dptr, uint64_t size, std::mt19937_64& rng) {
  const uint64_t out = size;  // the reply lands after the bytes sent
  std::span<uint8_t> data = ch.data();
  for (uint64_t i = 0; i < size; ++i) data[i] = static_cast<uint8_t>(rng());
  std::memset(data.data() + out, 0, size);
  if (!p.call(make(MemcpyHtoDRequest{dptr, 0, size, 0}), "MemcpyHtoD", nullptr)) return false;
  if (!p.call(make(MemcpyDtoHRequest{dptr, out, size, 0}), "MemcpyDtoH", nullptr)) return false;
  return std::memcmp(data.data(), data.data() + out, size) == 0;
}

int run_fields(const Options& o, Channel& ch, std::mt19937_64& rng) {
  Pipeline p(ch, 32);
  // The region header's geometry is the guest's to scribble on; the host
  // kept its own copy and must not care.
  vgpu_region_header* h = ch.header();
  h->magic = 0xdeadbeef;
  h->region_size = ~0ull;
  h->ring_size = 8;
  h->data_offset = 1;
  h->data_size = ~0ull;
  Targets t;
  t.own_size = 64 << 10;
  t.data_size = ch.data().size();
  t.foreign = o.foreign;
  if (!malloc_one(p, t.own_size, &t.own) || !malloc_one(p, 4096, &t.freed) ||
      !p.call(make(FreeRequest{t.freed}), "Free", nullptr)) {
    return fail("the honest set-up calls failed");
  }
  for (size_t i = 0; i < 4096; ++i) ch.data()[t.data_size / 2 + i] = static_cast<uint8_t>(rng());
  const std::vector<FieldAttack> attacks = field_attacks(t);
  const auto end = Clock::now() + std::chrono::duration<double>(o.seconds);
  const auto start = Clock::now();
  uint64_t n = 0;
  while (Clock::now() < end) {
    const FieldAttack& a = attacks[rng() % attacks.size()];
    if (!p.submit([&](uint64_t id) { return a.build(id, rng); }, {a.what, a.kind, a.status, {}})) {
      return fail("the channel went away during attack " + std::to_string(n) + " (" + a.what + ")");
    }
    if (++n % 64 == 0) {  // an honest call in between must still be served
      p.submit(make(GetDeviceCountRequest{}), {"GetDeviceCount", Kind::kHonest, -1,
                                              [](std::span<const uint8_t> r) {
                                                return r.size() == 8 && r[0] == 1;
                                              }});
    }
  }
  if (!p.drain(30s)) return fail("replies missing after the attacks");
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  const bool data_ok = round_trip(p, ch, t.own, 4096, rng);
  if (!p.call(make(FreeRequest{t.own}), "Free", nullptr)) return fail("freeing our own buffer failed");
  print_tally(p.tally());
  std::printf("attacks %llu\nattacks_per_s %.0f\nchannel_open %d\nround_trip_ok %d\n",
              static_cast<unsigned long long>(n), static_cast<double>(n) / secs,
              ch.host_gone() ? 0 : 1, data_ok ? 1 : 0);
  if (!tally_clean(p.tally())) return fail("some requests got the wrong answer or none");
  if (ch.host_gone()) return fail("the host closed a channel whose framing was sound");
  if (!data_ok) return fail("honest data came back wrong");
  std::printf("RESULT ok\n");
  return 0;
}

int run_framing(const Options& o, std::mt19937_64& rng) {
  const auto end = Clock::now() + std::chrono::duration<double>(o.seconds);
  int attacks = 0, closed = 0;
  double worst_ms = 0, total_ms = 0;
  while (Clock::now() < end) {
    std::string why;
    auto ch = Channel::connect(o.socket, o.vm, &why);
    if (!ch) return fail("connect: " + why);
    // Every other channel first carries an honest call, so attacks also hit
    // a channel that has a device context.
    if (attacks % 2 == 1) {
      Pipeline p(*ch, 1);
      if (!p.call(make(GetDeviceCountRequest{}), "GetDeviceCount", nullptr)) {
        return fail("an honest call before the attack failed");
      }
    }
    const std::string what = framing_attack(*ch, attacks, rng);
    attacks++;
    const auto t0 = Clock::now();
    while (!ch->host_gone() && Clock::now() - t0 < 5s) std::this_thread::sleep_for(200us);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (!ch->host_gone()) {
      std::printf("not_closed %s\n", what.c_str());
      continue;
    }
    closed++;
    worst_ms = std::max(worst_ms, ms);
    total_ms += ms;
  }
  std::printf("attacks %d\nclosed %d\nclose_ms_mean %.2f\nclose_ms_max %.2f\n", attacks, closed,
              closed ? total_ms / closed : 0.0, worst_ms);
  if (closed != attacks) return fail("the host kept a channel whose ring rules were broken");
  std::printf("RESULT ok\n");
  return 0;
}

// As a real VM's guest kernel: clients are (generation << 8) | (slot + 1).
int run_slots(const Options& o, Channel& ch) {
  Pipeline p(ch, 64);
  auto as_client = [](uint32_t client, auto r) {
    return [client, r](uint64_t id) {
      std::vector<uint8_t> m = request(id, r);
      vgpu_msg_header h = header_of(m);
      h.client = client;
      set_header(&m, h);
      return m;
    };
  };
  auto is_one = [](std::span<const uint8_t> r) { return r.size() == 8 && r[0] == 1; };
  // The kernel attaches: the host releases whatever the VM held.
  if (!p.call(as_client(VGPU_VM_KERNEL_CLIENT, GoodbyeRequest{}), "attach", nullptr)) {
    return fail("the kernel's attach was not answered");
  }
  p.submit(as_client(VGPU_VM_CLIENT(1, 0), GetDeviceCountRequest{}),
           {"slot 0 generation 1", Kind::kHonest, -1, is_one});
  // Made-up generations on slot 0, which generation 1 holds.
  for (int g = 2; g < 2 + o.count; ++g) {
    p.submit(as_client(VGPU_VM_CLIENT(g, 0), GetDeviceCountRequest{}),
             {"made-up generation on a held slot", Kind::kMalformed, 1, {}});
  }
  p.submit(as_client(0x11, GetDeviceCountRequest{}), {"slot 16", Kind::kMalformed, 1, {}});
  // Generation 1 says goodbye; then the slot's next generation is served.
  p.submit(as_client(VGPU_VM_CLIENT(1, 0), GoodbyeRequest{}), {"goodbye", Kind::kHonest, -1, {}});
  p.submit(as_client(VGPU_VM_CLIENT(2 + o.count, 0), GetDeviceCountRequest{}),
           {"slot 0 next generation", Kind::kHonest, -1, is_one});
  // Every other slot once.
  for (uint32_t slot = 1; slot < VGPU_VM_SLOTS; ++slot) {
    p.submit(as_client(VGPU_VM_CLIENT(7, slot), GetDeviceCountRequest{}),
             {"one client per slot", Kind::kHonest, -1, is_one});
  }
  if (!p.drain(30s)) return fail("replies missing");
  print_tally(p.tally());
  if (!tally_clean(p.tally())) return fail("some requests got the wrong answer or none");
  std::printf("RESULT ok\n");
  return 0;
}

int run_honest(const Options& o, Channel& ch, std::mt19937_64& rng) {
  Pipeline p(ch, 16);
  uint64_t buf = 0;
  if (!malloc_one(p, 1 << 20, &buf)) return fail("Malloc failed");
  int bad_data = 0;
  for (int round = 0; round < o.count; ++round) {
    if (!round_trip(p, ch, buf, 4096 + static_cast<uint64_t>(rng() % 60000), rng)) bad_data++;
    std::vector<uint8_t> reply;
    uint64_t stream = 0, event = 0;
    if (!p.call(make(StreamCreateRequest{0, 0}), "StreamCreate", &reply)) return fail("StreamCreate");
    std::memcpy(&stream, reply.data(), 8);
    if (!p.call(make(EventCreateRequest{0, 0}), "EventCreate", &reply)) return fail("EventCreate");
    std::memcpy(&event, reply.data(), 8);
    // Pipelined: several in flight at once, each answered exactly once.
    p.submit(make(MemsetRequest{buf, 4096, stream, 7, 0}), {"Memset", Kind::kHonest, -1, {}});
    p.submit(make(EventRecordRequest{event, stream}), {"EventRecord", Kind::kHonest, -1, {}});
    p.submit(make(StreamWaitEventRequest{0, event, 0, 0}), {"StreamWaitEvent", Kind::kHonest, -1, {}});
    p.submit(make(MemGetInfoRequest{}), {"MemGetInfo", Kind::kHonest, -1, {}});
    p.submit(make(StreamSynchronizeRequest{stream}), {"StreamSynchronize", Kind::kHonest, -1, {}});
    p.submit(make(EventDestroyRequest{event}), {"EventDestroy", Kind::kHonest, -1, {}});
    p.submit(make(StreamDestroyRequest{stream}), {"StreamDestroy", Kind::kHonest, -1, {}});
    p.submit(make(DeviceSynchronizeRequest{}), {"DeviceSynchronize", Kind::kHonest, -1, {}});
    if (!p.drain(60s)) return fail("replies missing");
  }
  if (!p.call(make(FreeRequest{buf}), "Free", nullptr)) return fail("Free failed");
  print_tally(p.tally());
  std::printf("bad_data %d\n", bad_data);
  if (!tally_clean(p.tally()) || bad_data) return fail("lost, duplicated or wrong answers");
  std::printf("RESULT ok\n");
  return 0;
}

int run_flood(const Options& o, Channel& ch) {
  Pipeline p(ch, 1);
  // Each memset costs the host's dispatcher more than the loop's reading it
  // costs (256 KiB stays in a core's cache), so the queue outgrows what the
  // dispatcher runs however the cores are shared.
  constexpr uint64_t kBytes = 256 << 10;
  uint64_t buf = 0;
  if (!malloc_one(p, kBytes, &buf)) return fail("Malloc failed");
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(o.seconds);
  uint64_t sent = 0, blocked = 0;
  std::vector<uint8_t> reply;
  while (Clock::now() < end) {
    const std::vector<uint8_t> m = request(sent + 100, MemsetRequest{buf, kBytes, 0, 1, 0}, {},
                                           VGPU_MSG_QUIET);
    if (ch.try_send(m)) {
      sent++;
    } else {
      blocked++;
      if (ch.host_gone()) return fail("the host closed the flooding channel");
      ch.ring_host();
      std::this_thread::sleep_for(100us);
    }
    if (ch.try_receive(&reply) == transport::RingReader::Result::kMessage) {
      return fail("a quiet memset failed");
    }
  }
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  if (!p.call(make(DeviceSynchronizeRequest{}), "DeviceSynchronize", nullptr)) {
    return fail("the final synchronize failed");
  }
  std::printf("sent %llu\nsent_per_s %.0f\nring_full %llu\n", static_cast<unsigned long long>(sent),
              static_cast<double>(sent) / secs, static_cast<unsigned long long>(blocked));
  std::printf("RESULT ok\n");
  return 0;
}

// With --interval-us the calls are paced (a program that computes between
// them); with --round-trip-every N every Nth call is followed by a 4 KiB copy
// to the device and back, its data checked and its time counted apart (work
// that goes through the scheduler, not answered at once).
int run_latency(const Options& o, Channel& ch, std::mt19937_64& rng) {
  Pipeline p(ch, 1);
  uint64_t buf = 0;
  if (o.round_trip_every > 0 && !malloc_one(p, 4096, &buf)) return fail("Malloc failed");
  const auto end = Clock::now() + std::chrono::duration<double>(o.seconds);
  uint64_t calls = 0, over_10ms = 0, bad_data = 0;
  double worst_us = 0;
  std::vector<double> call_us, trip_us;
  while (Clock::now() < end) {
    const auto t0 = Clock::now();
    if (!p.call(make(GetDeviceCountRequest{}), "GetDeviceCount", nullptr)) {
      return fail("GetDeviceCount failed");
    }
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    worst_us = std::max(worst_us, us);
    over_10ms += us > 10000;
    call_us.push_back(us);
    calls++;
    if (o.round_trip_every > 0 && calls % static_cast<uint64_t>(o.round_trip_every) == 0) {
      const auto r0 = Clock::now();
      bad_data += !round_trip(p, ch, buf, 4096, rng);
      trip_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - r0).count());
    }
    if (o.interval_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(o.interval_us));
  }
  auto percentile = [](std::vector<double> v, double q) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
  };
  std::printf("calls %llu\nworst_us %.0f\nover_10ms %llu\np50_us %.1f\np99_us %.1f\n",
              static_cast<unsigned long long>(calls), worst_us,
              static_cast<unsigned long long>(over_10ms), percentile(call_us, 0.5),
              percentile(call_us, 0.99));
  if (o.round_trip_every > 0) {
    std::printf("round_trips %zu\ntrip_p50_us %.1f\ntrip_p99_us %.1f\nbad_data %llu\n",
                trip_us.size(), percentile(trip_us, 0.5), percentile(trip_us, 0.99),
                static_cast<unsigned long long>(bad_data));
    if (bad_data) return fail("a copy came back wrong");
  }
  std::printf("RESULT ok\n");
  return 0;
}

int run_noread(const Options& o, Channel& ch) {
  uint64_t sent = 0;
  auto since = Clock::now();
  while (Clock::now() - since < 1s) {  // until the ring has been full for a second
    const std::vector<uint8_t> m = request(sent + 1, GetDeviceCountRequest{});
    if (ch.try_send(m)) {
      sent++;
      since = Clock::now();
    } else {
      ch.ring_host();
      std::this_thread::sleep_for(1ms);
    }
  }
  std::printf("sent %llu\nring_full 1\n", static_cast<unsigned long long>(sent));
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
  std::printf("channel_open %d\nRESULT ok\n", ch.host_gone() ? 0 : 1);
  return 0;
}

bool parse(int argc, char** argv, Options* o) {
  if (argc < 2) return false;
  o->mode = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--socket") o->socket = v;
    else if (k == "--vm") o->vm = v;
    else if (k == "--region") o->region = v;
    else if (k == "--seconds") o->seconds = std::atof(v.c_str());
    else if (k == "--foreign") o->foreign = std::strtoull(v.c_str(), nullptr, 0);
    else if (k == "--seed") o->seed = std::strtoull(v.c_str(), nullptr, 0);
    else if (k == "--count") o->count = std::atoi(v.c_str());
    else if (k == "--interval-us") o->interval_us = std::atoi(v.c_str());
    else if (k == "--round-trip-every") o->round_trip_every = std::atoi(v.c_str());
    else return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);
  Options o;
  if (!parse(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: vgpu-test-vm fields|framing|slots|honest|flood|noread|latency|bomb "
                 "[--socket PATH] "
                 "[--vm NAME] [--region FILE] [--seconds S] [--foreign 0xPTR] [--seed N] "
                 "[--count N] [--interval-us N] [--round-trip-every N]\n");
    return 2;
  }
  std::mt19937_64 rng(o.seed ? o.seed : std::random_device{}());
  if (o.mode == "framing") return run_framing(o, rng);
  std::string why;
  auto ch = o.mode == "slots" ? Channel::attach_file(o.region, &why)
                              : Channel::connect(o.socket, o.vm, &why);
  if (!ch) return fail(why);
  if (o.mode == "fields") return run_fields(o, *ch, rng);
  if (o.mode == "slots") return run_slots(o, *ch);
  if (o.mode == "honest") return run_honest(o, *ch, rng);
  if (o.mode == "flood") return run_flood(o, *ch);
  if (o.mode == "noread") return run_noread(o, *ch);
  if (o.mode == "latency") return run_latency(o, *ch, rng);
  if (o.mode == "bomb") return run_bomb(*ch, o.seconds);
  return fail("unknown mode " + o.mode);
}
