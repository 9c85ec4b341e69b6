// The host's call handler on requests a hostile or buggy guest could send,
// with the real sim backend behind it: every bad field gets an error and
// nothing is queued or touched.
#include <cstring>
#include <vector>

#include <catch2/catch.hpp>

#include "vgpu/executor/call_handler.h"
#include "vgpu/executor/sim_backend.h"
#include "vgpu/protocol/rows.h"

using namespace vgpu;
using namespace vgpu::executor;
using namespace vgpu::proto;

namespace {

struct RecordingSink final : WorkSink {
  std::vector<std::pair<Work, ReplyTo>> queued;
  void submit(TenantId, Work&& w, const ReplyTo& r) override { queued.emplace_back(std::move(w), r); }
  uint64_t gpu_ns(TenantId tenant) override { return tenant * 1000; }  // each tenant its own
};

struct Fixture {
  std::unique_ptr<Backend> backend;
  RecordingSink sink;
  std::unique_ptr<CallHandler> calls;
  std::vector<uint8_t> data_area = std::vector<uint8_t>(1 << 20);
  Caller alice, bob;

  Fixture() {
    SimConfig config;
    config.device_memory = 1ull << 30;
    REQUIRE(make_sim_backend(config, &backend) == Status::kSuccess);
    calls = std::make_unique<CallHandler>(backend.get(), &sink);
    REQUIRE(backend->create_context(1, &alice.context) == Status::kSuccess);
    REQUIRE(backend->create_context(2, &bob.context) == Status::kSuccess);
    alice.tenant = 1;
    alice.channel = 10;
    alice.data_area = data_area;
    bob.tenant = 2;
    bob.channel = 20;
    bob.data_area = data_area;
  }
  ~Fixture() {
    for (auto& [w, r] : sink.queued) backend->discard(w);
    backend->destroy_context(alice.context);
    backend->destroy_context(bob.context);
  }

  template <class Request>
  Outcome send(const Caller& c, const Request& req, std::vector<uint8_t> tail = {}, uint32_t flags = 0) {
    std::vector<uint8_t> msg(VGPU_MSG_HEADER_SIZE + sizeof(Request) + tail.size());
    encode_request(msg, 7, flags, req, tail);
    return calls->handle(c, msg);
  }
  uint64_t malloc_on(const Caller& c, uint64_t size) {
    Outcome o = send(c, MallocRequest{size});
    REQUIRE(o.status == Status::kSuccess);
    MallocReply r;
    std::memcpy(&r, o.reply.data(), sizeof r);
    return r.dptr;
  }
};

}  // namespace

TEST_CASE("malformed messages are answered with errors") {
  Fixture f;
  std::vector<uint8_t> msg(VGPU_MSG_HEADER_SIZE + sizeof(MallocRequest));
  encode_request(msg, 1, 0, MallocRequest{64});

  SECTION("short of a header") {
    CHECK(f.calls->handle(f.alice, std::span(msg).first(10)).status == Status::kInvalidValue);
  }
  SECTION("unknown opcode") {
    msg[6] = 0x77;
    msg[7] = 0x77;
    CHECK(f.calls->handle(f.alice, msg).status == Status::kNotSupported);
  }
  SECTION("another protocol version") {
    msg[4] = 9;
    CHECK(f.calls->handle(f.alice, msg).status == Status::kInsufficientDriver);
  }
  SECTION("a payload length past the message") {
    vgpu_msg_header h;
    std::memcpy(&h, msg.data(), sizeof h);
    h.payload_len = 4096;
    std::memcpy(msg.data(), &h, sizeof h);
    CHECK(f.calls->handle(f.alice, msg).status == Status::kInvalidValue);
  }
  CHECK(f.sink.queued.empty());
}

TEST_CASE("data-area ranges outside the caller's data area are refused") {
  Fixture f;
  const uint64_t dst = f.malloc_on(f.alice, 4096);
  const uint64_t area = f.data_area.size();
  CHECK(f.send(f.alice, MemcpyHtoDRequest{dst, area - 16, 64, 0}).status == Status::kInvalidValue);
  CHECK(f.send(f.alice, MemcpyHtoDRequest{dst, area + 1, 0, 0}).status == Status::kInvalidValue);
  CHECK(f.send(f.alice, MemcpyDtoHRequest{dst, ~0ull - 8, 64, 0}).status == Status::kInvalidValue);
  CHECK(f.send(f.alice, MemcpyDtoHRequest{dst, 64, ~0ull - 32, 0}).status == Status::kInvalidValue);
  CHECK(f.send(f.alice, ModuleLoadRequest{area - 4, 100}).status == Status::kInvalidValue);
  CHECK(f.sink.queued.empty());
}

TEST_CASE("another tenant's pointer, a forged handle or a bad range is refused before queueing") {
  Fixture f;
  const uint64_t mine = f.malloc_on(f.alice, 4096);
  const uint64_t theirs = f.malloc_on(f.bob, 4096);
  CHECK(f.send(f.alice, MemcpyHtoDRequest{theirs, 0, 64, 0}).status == Status::kInvalidValue);
  CHECK(f.send(f.alice, MemcpyDtoHRequest{theirs, 0, 64, 0}).status == Status::kInvalidValue);
  CHECK(f.send(f.alice, MemcpyDtoDRequest{mine, theirs, 64, 0}).status == Status::kInvalidValue);
  CHECK(f.send(f.alice, MemsetRequest{theirs, 64, 0, 1, 0}).status == Status::kInvalidValue);
  CHECK(f.send(f.alice, MemcpyHtoDRequest{mine, 0, 8192, 0}).status == Status::kInvalidValue);
  CHECK(f.send(f.alice, MemcpyHtoDRequest{mine, 0, 64, 0xdeadbeef}).status ==
        Status::kInvalidResourceHandle);
  CHECK(f.send(f.alice, EventRecordRequest{0x1234, 0}).status == Status::kInvalidResourceHandle);
  CHECK(f.send(f.alice, StreamQueryRequest{0x777}).status == Status::kInvalidResourceHandle);
  CHECK(f.send(f.alice, FreeRequest{theirs}).status == Status::kInvalidValue);
  CHECK(f.sink.queued.empty());

  // Bob's stream is not Alice's either.
  Outcome s = f.send(f.bob, StreamCreateRequest{0, 0});
  REQUIRE(s.status == Status::kSuccess);
  StreamCreateReply stream;
  std::memcpy(&stream, s.reply.data(), sizeof stream);
  CHECK(f.send(f.alice, MemcpyHtoDRequest{mine, 0, 64, stream.stream}).status ==
        Status::kInvalidResourceHandle);
}

TEST_CASE("a valid copy is queued with its bytes in the caller's data area") {
  Fixture f;
  const uint64_t dst = f.malloc_on(f.alice, 4096);
  Outcome o = f.send(f.alice, MemcpyHtoDRequest{dst, 128, 256, 0}, {}, VGPU_MSG_QUIET);
  REQUIRE(o.kind == Outcome::Kind::kQueued);
  REQUIRE(f.sink.queued.size() == 1);
  const auto& [work, reply] = f.sink.queued[0];
  CHECK(work.context == f.alice.context);
  const auto* copy = std::get_if<CopyHtoD>(&work.op);
  REQUIRE(copy);
  CHECK(copy->src == f.data_area.data() + 128);
  CHECK(copy->size == 256);
  CHECK(reply.quiet);
  CHECK(reply.channel == 10);
  CHECK(reply.request_id == 7);
}

TEST_CASE("a copy of rows: its host side inside the data area, its device side the caller's own") {
  Fixture f;
  const uint64_t mine = f.malloc_on(f.alice, 4096);
  const uint64_t theirs = f.malloc_on(f.bob, 4096);
  const uint64_t area = f.data_area.size();
  auto rows = [](uint32_t kind, uint64_t dst, uint64_t dst_pitch, uint64_t src, uint64_t src_pitch,
                 uint64_t width, uint64_t height) {
    return MemcpyRowsRequest{dst, dst_pitch, src, src_pitch, width, height, 0, kind, 0};
  };
  // The data area's last row ends one byte past it.
  CHECK(f.send(f.alice, rows(kRowsHostToDevice, mine, 64, area - 3 * 100 - 31, 100, 32, 4)).status ==
        Status::kInvalidValue);
  CHECK(f.send(f.alice, rows(kRowsDeviceToHost, area - 3 * 100 - 31, 100, mine, 64, 32, 4)).status ==
        Status::kInvalidValue);
  // Another tenant's memory, rows past the allocation, shapes that are not.
  CHECK(f.send(f.alice, rows(kRowsHostToDevice, theirs, 64, 0, 32, 32, 4)).status == Status::kInvalidValue);
  CHECK(f.send(f.alice, rows(kRowsDeviceToDevice, mine, 64, theirs, 64, 32, 4)).status == Status::kInvalidValue);
  CHECK(f.send(f.alice, rows(kRowsDeviceToDevice, mine, 1024, mine, 64, 32, 5)).status == Status::kInvalidValue);
  CHECK(f.send(f.alice, rows(kRowsDeviceToDevice, mine, 16, mine + 2048, 64, 32, 4)).status == Status::kInvalidValue);
  CHECK(f.send(f.alice, rows(3, mine, 64, mine + 2048, 64, 32, 4)).status == Status::kInvalidValue);
  CHECK(f.send(f.alice, rows(kRowsHostToDevice, mine, ~0ull / 2, 0, 32, 32, 4)).status == Status::kInvalidValue);
  MemcpyRowsRequest reserved = rows(kRowsHostToDevice, mine, 64, 0, 32, 32, 4);
  reserved.reserved = 1;
  CHECK(f.send(f.alice, reserved).status == Status::kInvalidValue);
  CHECK(f.sink.queued.empty());

  // A good one is queued with its host rows where they lie in the data area.
  REQUIRE(f.send(f.alice, rows(kRowsDeviceToHost, 512, 100, mine + 8, 64, 32, 4)).kind ==
          Outcome::Kind::kQueued);
  REQUIRE(f.sink.queued.size() == 1);
  const auto* copy = std::get_if<CopyRows>(&f.sink.queued[0].first.op);
  REQUIRE(copy);
  CHECK(copy->host == f.data_area.data() + 512);
  CHECK(copy->src == mine + 8);
  CHECK(copy->height == 4);
}

TEST_CASE("module and kernel requests with bad names or images are refused") {
  Fixture f;
  std::vector<uint8_t> junk(512, 0x41);
  std::memcpy(f.data_area.data(), junk.data(), junk.size());
  CHECK(f.send(f.alice, ModuleLoadRequest{0, junk.size()}).status != Status::kSuccess);
  CHECK(f.send(f.alice, ModuleLoadRequest{0, 0}).status == Status::kInvalidValue);
  const std::vector<uint8_t> empty;
  const std::vector<uint8_t> spaced = {'a', ' ', 'b'};
  const std::vector<uint8_t> control = {'a', 0, 'b'};
  CHECK(f.send(f.alice, FunctionGetRequest{1}, empty).status == Status::kInvalidValue);
  CHECK(f.send(f.alice, FunctionGetRequest{1}, spaced).status == Status::kInvalidValue);
  CHECK(f.send(f.alice, VarGetRequest{1, 4}, control).status == Status::kInvalidValue);
  const std::vector<uint8_t> name = {'_', 'Z', '1', 'f'};
  CHECK(f.send(f.alice, FunctionGetRequest{0x999}, name).status == Status::kInvalidResourceHandle);
  LaunchKernelRequest launch{};
  launch.function = 0x4242;
  launch.grid[0] = launch.grid[1] = launch.grid[2] = 1;
  launch.block[0] = launch.block[1] = launch.block[2] = 1;
  CHECK(f.send(f.alice, launch).status != Status::kSuccess);
  CHECK(f.sink.queued.empty());
}

TEST_CASE("device queries check the device ordinal and attribute range") {
  Fixture f;
  CHECK(f.send(f.alice, GetDevicePropertiesRequest{1, 0}).status == Status::kInvalidDevice);
  CHECK(f.send(f.alice, GetDevicePropertiesRequest{-1, 0}).status == Status::kInvalidDevice);
  CHECK(f.send(f.alice, DeviceGetAttributeRequest{160, 0}).status == Status::kInvalidValue);
  CHECK(f.send(f.alice, DeviceGetAttributeRequest{-5, 0}).status == Status::kInvalidValue);
  Outcome o = f.send(f.alice, DeviceGetAttributeRequest{10, 0});  // cudaDevAttrWarpSize
  REQUIRE(o.status == Status::kSuccess);
  DeviceGetAttributeReply r;
  std::memcpy(&r, o.reply.data(), sizeof r);
  CHECK(r.value == 32);
}

TEST_CASE("a tenant's usage is its own, with the host's clock") {
  Fixture f;
  auto usage = [&](const Caller& c) {
    Outcome o = f.send(c, TenantUsageRequest{});
    REQUIRE(o.status == Status::kSuccess);
    TenantUsageReply r;
    std::memcpy(&r, o.reply.data(), sizeof r);
    return r;
  };
  const TenantUsageReply a = usage(f.alice), b = usage(f.bob), later = usage(f.alice);
  CHECK(a.gpu_ns == 1000);  // the sink's figure for tenant 1, not tenant 2's
  CHECK(b.gpu_ns == 2000);
  CHECK(later.now_ns >= a.now_ns);
  CHECK(a.now_ns > 0);
}
