#include <cstring>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "vgpu/protocol/codec.h"
#include "vgpu/transport/ring.h"

using namespace vgpu;
using namespace vgpu::transport;

namespace {

// A ring in ordinary memory, with the two ends a channel would have.
struct TestRing {
  explicit TestRing(uint32_t size) : bytes(size) {}
  vgpu_ring_ctl ctl{};
  std::vector<uint8_t> bytes;
  RingWriter writer() { return RingWriter(&ctl, bytes.data(), static_cast<uint32_t>(bytes.size())); }
  RingReader reader() { return RingReader(&ctl, bytes.data(), static_cast<uint32_t>(bytes.size())); }
};

std::vector<uint8_t> message(uint64_t id, uint32_t payload_len) {
  std::vector<uint8_t> m(VGPU_MSG_HEADER_SIZE + payload_len);
  auto h = proto::make_header(static_cast<uint16_t>(proto::Op::Malloc), id, 0, payload_len, 0);
  std::memcpy(m.data(), &h, sizeof h);
  for (uint32_t i = 0; i < payload_len; ++i) m[VGPU_MSG_HEADER_SIZE + i] = static_cast<uint8_t>(id + i);
  return m;
}

RingWriter::Result put(RingWriter& w, const std::vector<uint8_t>& m) {
  std::span<const uint8_t> part(m);
  return w.write({&part, 1});
}

}  // namespace

TEST_CASE("an empty ring reads empty; messages come out in order and intact") {
  TestRing ring(1 << 17);
  auto w = ring.writer();
  auto r = ring.reader();
  std::vector<uint8_t> out;
  CHECK(r.read(&out) == RingReader::Result::kEmpty);
  CHECK(r.empty());
  for (uint64_t i = 0; i < 10; ++i) REQUIRE(put(w, message(i, static_cast<uint32_t>(i * 3))) == RingWriter::Result::kOk);
  for (uint64_t i = 0; i < 10; ++i) {
    REQUIRE(r.read(&out) == RingReader::Result::kMessage);
    CHECK(out == message(i, static_cast<uint32_t>(i * 3)));
  }
  CHECK(r.read(&out) == RingReader::Result::kEmpty);
}

TEST_CASE("a full ring refuses a message without writing, then takes it once read") {
  TestRing ring(1 << 17);  // 128 KiB: two largest messages
  auto w = ring.writer();
  auto r = ring.reader();
  const auto big = message(1, 60000);
  REQUIRE(put(w, big) == RingWriter::Result::kOk);
  REQUIRE(put(w, big) == RingWriter::Result::kOk);
  const uint32_t head_before = ring.ctl.head;
  CHECK(put(w, big) == RingWriter::Result::kFull);
  CHECK(ring.ctl.head == head_before);
  std::vector<uint8_t> out;
  REQUIRE(r.read(&out) == RingReader::Result::kMessage);
  CHECK(put(w, big) == RingWriter::Result::kOk);  // wraps around, with padding
  REQUIRE(r.read(&out) == RingReader::Result::kMessage);
  REQUIRE(r.read(&out) == RingReader::Result::kMessage);
  CHECK(out == big);
  CHECK(r.read(&out) == RingReader::Result::kEmpty);
}

TEST_CASE("a waiting producer is woken once half the ring is free, not after every message") {
  TestRing ring(1 << 17);
  auto w = ring.writer();
  auto r = ring.reader();
  const auto small = message(1, 1000);  // 1,032 bytes a record
  int written = 0;
  while (put(w, small) == RingWriter::Result::kOk) ++written;
  REQUIRE(written > 100);
  std::vector<uint8_t> out;
  CHECK_FALSE(r.producer_needs_wake());  // nobody waits
  w.set_producer_waiting(true);
  int read = 0, woken_at = -1;
  while (r.read(&out) == RingReader::Result::kMessage) {
    ++read;
    if (r.producer_needs_wake()) {
      woken_at = read;
      break;
    }
  }
  // Not while more than half the ring is still in use.
  CHECK(woken_at == (written + 1) / 2);
  w.set_producer_waiting(false);
  CHECK_FALSE(r.producer_needs_wake());
}

TEST_CASE("the writer sees when the reader has taken everything it wrote") {
  TestRing ring(1 << 17);
  auto w = ring.writer();
  auto r = ring.reader();
  CHECK(w.all_read());  // nothing written yet
  REQUIRE(put(w, message(1, 10)) == RingWriter::Result::kOk);
  REQUIRE(put(w, message(2, 10)) == RingWriter::Result::kOk);
  CHECK_FALSE(w.all_read());
  std::vector<uint8_t> out;
  REQUIRE(r.read(&out) == RingReader::Result::kMessage);
  CHECK_FALSE(w.all_read());  // one of two still waits
  REQUIRE(r.read(&out) == RingReader::Result::kMessage);
  CHECK(w.all_read());
}

TEST_CASE("messages of every size survive many wrap-arounds, including the index overflow") {
  TestRing ring(1 << 17);
  // Start near 2^32 so the free-running indices overflow during the test.
  ring.ctl.head = ring.ctl.tail = 0xfffff000u;
  auto w = ring.writer();
  auto r = ring.reader();
  std::mt19937 rng(7);
  std::vector<uint8_t> out;
  uint64_t sent = 0, got = 0;
  std::vector<std::vector<uint8_t>> in_flight;
  while (got < 20000) {
    if (sent - got < 50 && (rng() % 2)) {
      auto m = message(sent, static_cast<uint32_t>(rng() % 3000));
      if (put(w, m) == RingWriter::Result::kOk) {
        in_flight.push_back(std::move(m));
        ++sent;
      }
    } else {
      auto res = r.read(&out);
      REQUIRE(res != RingReader::Result::kCorrupt);
      if (res == RingReader::Result::kMessage) {
        REQUIRE(out == in_flight.front());
        in_flight.erase(in_flight.begin());
        ++got;
      }
    }
  }
  CHECK(ring.ctl.head < 0xfffff000u);  // it did overflow
}

TEST_CASE("a reader rejects indices and lengths the writer cannot have produced") {
  TestRing ring(1 << 17);
  auto w = ring.writer();
  std::vector<uint8_t> out;
  SECTION("head more than a ring ahead") {
    auto r = ring.reader();
    ring.ctl.head = (1 << 17) + 8;
    CHECK(r.read(&out) == RingReader::Result::kCorrupt);
    CHECK(r.read(&out) == RingReader::Result::kCorrupt);  // and stays so
  }
  SECTION("unaligned head") {
    auto r = ring.reader();
    ring.ctl.head = 12;
    CHECK(r.read(&out) == RingReader::Result::kCorrupt);
  }
  SECTION("payload length past the published head") {
    REQUIRE(put(w, message(1, 16)) == RingWriter::Result::kOk);
    auto r = ring.reader();
    vgpu_msg_header h;
    std::memcpy(&h, ring.bytes.data(), sizeof h);
    h.payload_len = 4000;
    std::memcpy(ring.bytes.data(), &h, sizeof h);
    CHECK(r.read(&out) == RingReader::Result::kCorrupt);
  }
  SECTION("garbage instead of a header") {
    REQUIRE(put(w, message(1, 16)) == RingWriter::Result::kOk);
    auto r = ring.reader();
    ring.bytes[0] ^= 0xff;
    CHECK(r.read(&out) == RingReader::Result::kCorrupt);
  }
  SECTION("a huge payload length") {
    REQUIRE(put(w, message(1, 16)) == RingWriter::Result::kOk);
    auto r = ring.reader();
    vgpu_msg_header h;
    std::memcpy(&h, ring.bytes.data(), sizeof h);
    h.payload_len = 0xffffffffu;
    std::memcpy(ring.bytes.data(), &h, sizeof h);
    CHECK(r.read(&out) == RingReader::Result::kCorrupt);
  }
}

TEST_CASE("a writer rejects a consumer index it cannot have published") {
  TestRing ring(1 << 17);
  auto w = ring.writer();
  ring.ctl.tail = 0x1000;  // consumer claims to have read what was never written
  CHECK(put(w, message(1, 8)) == RingWriter::Result::kCorrupt);
}

TEST_CASE("random garbage in a ring never crashes the reader") {
  std::mt19937_64 rng(99);
  for (int round = 0; round < 2000; ++round) {
    TestRing ring(1 << 17);
    for (size_t i = 0; i < 512; ++i) ring.bytes[i] = static_cast<uint8_t>(rng());
    if (round % 2) {  // plausible header so deeper checks run
      auto h = proto::make_header(1, 1, 0, static_cast<uint32_t>(rng() % 70000), 0);
      std::memcpy(ring.bytes.data(), &h, sizeof h);
    }
    ring.ctl.head = static_cast<uint32_t>(rng() % 1024) & ~7u;
    auto r = ring.reader();
    std::vector<uint8_t> out;
    for (int i = 0; i < 8; ++i) {
      auto res = r.read(&out);
      if (res == RingReader::Result::kMessage) REQUIRE(out.size() <= VGPU_MSG_MAX_SIZE);
      if (res != RingReader::Result::kMessage) break;
    }
  }
}
