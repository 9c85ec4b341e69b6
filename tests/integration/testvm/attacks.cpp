#include "attacks.h"

#include <atomic>
#include <cstring>

namespace vgpu::testvm {

using namespace vgpu::proto;

namespace {

constexpr int32_t kInvalidValue = 1;
constexpr int32_t kMemoryAllocation = 2;
constexpr int32_t kInsufficientDriver = 35;
constexpr int32_t kInvalidDevice = 101;
constexpr int32_t kInvalidResourceHandle = 400;
constexpr int32_t kNotSupported = 801;

// A handle no one was given: random, never 0, 1 or 2 (the default streams).
uint64_t forged(std::mt19937_64& rng) { return rng() | 0x8000'0000'0000'0000ull; }

// A request with one header field changed after encoding.
template <class Request>
std::vector<uint8_t> with_header(uint64_t id, const Request& r,
                                 const std::function<void(vgpu_msg_header&)>& change) {
  std::vector<uint8_t> m = request(id, r);
  vgpu_msg_header h = header_of(m);
  change(h);
  set_header(&m, h);
  return m;
}

// A request whose payload is `payload_len` bytes (zeros past the struct).
template <class Request>
std::vector<uint8_t> with_payload(uint64_t id, const Request& r, uint32_t payload_len) {
  std::vector<uint8_t> m(VGPU_MSG_HEADER_SIZE + payload_len, 0);
  const vgpu_msg_header h =
      make_header(static_cast<uint16_t>(OpOf<Request>::value), id, 0, payload_len, 0);
  std::memcpy(m.data(), &h, sizeof h);
  std::memcpy(m.data() + sizeof h, &r, std::min<size_t>(sizeof r, payload_len));
  return m;
}

}  // namespace

std::vector<FieldAttack> field_attacks(const Targets& t) {
  using R = std::mt19937_64;
  std::vector<FieldAttack> a;
  // --- refused by the decoder -------------------------------------------------------
  a.push_back({"unknown opcode", Kind::kMalformed, kNotSupported, [](uint64_t id, R&) {
                 return with_header(id, GetDeviceCountRequest{}, [](auto& h) { h.opcode = 0x7777; });
               }});
  a.push_back({"other protocol version", Kind::kMalformed, kInsufficientDriver, [](uint64_t id, R&) {
                 return with_header(id, GetDeviceCountRequest{}, [](auto& h) { h.version = 9; });
               }});
  a.push_back({"unknown flags", Kind::kMalformed, kInvalidValue, [](uint64_t id, R&) {
                 return with_header(id, GetDeviceCountRequest{}, [](auto& h) { h.flags = 0x80; });
               }});
  a.push_back({"a reply where a request belongs", Kind::kMalformed, kInvalidValue,
               [](uint64_t id, R&) {
                 return with_header(id, MallocRequest{64}, [](auto& h) { h.flags = VGPU_MSG_REPLY; });
               }});
  a.push_back({"payload shorter than the call's struct", Kind::kMalformed, kInvalidValue,
               [](uint64_t id, R&) { return with_payload(id, MemcpyHtoDRequest{}, 12); }});
  a.push_back({"a tail on a call that has none", Kind::kMalformed, kInvalidValue,
               [](uint64_t id, R&) { return with_payload(id, MallocRequest{64}, 24); }});
  a.push_back({"a name past the call's bound", Kind::kMalformed, kInvalidValue, [](uint64_t id, R&) {
                 return with_payload(id, FunctionGetRequest{1}, 8 + 2000);
               }});
  a.push_back({"a client this channel cannot have", Kind::kMalformed, kInvalidValue,
               [](uint64_t id, R& rng) {
                 return with_header(id, GetDeviceCountRequest{}, [&](auto& h) {
                   h.client = static_cast<uint32_t>(rng() | 1);
                 });
               }});
  // --- forged handles ----------------------------------------------------------------
  a.push_back({"StreamQuery of a forged stream", Kind::kRefused, kInvalidResourceHandle,
               [](uint64_t id, R& rng) { return request(id, StreamQueryRequest{forged(rng)}); }});
  a.push_back({"StreamSynchronize of a forged stream", Kind::kRefused, kInvalidResourceHandle,
               [](uint64_t id, R& rng) { return request(id, StreamSynchronizeRequest{forged(rng)}); }});
  a.push_back({"StreamDestroy of a forged stream", Kind::kRefused, kInvalidResourceHandle,
               [](uint64_t id, R& rng) { return request(id, StreamDestroyRequest{forged(rng)}); }});
  a.push_back({"StreamWaitEvent on a forged event", Kind::kRefused, kInvalidResourceHandle,
               [](uint64_t id, R& rng) {
                 return request(id, StreamWaitEventRequest{0, forged(rng), 0, 0});
               }});
  a.push_back({"EventQuery of a forged event", Kind::kRefused, kInvalidResourceHandle,
               [](uint64_t id, R& rng) { return request(id, EventQueryRequest{forged(rng)}); }});
  a.push_back({"EventRecord of a forged event", Kind::kRefused, kInvalidResourceHandle,
               [](uint64_t id, R& rng) { return request(id, EventRecordRequest{forged(rng), 0}); }});
  a.push_back({"EventSynchronize of a forged event", Kind::kRefused, kInvalidResourceHandle,
               [](uint64_t id, R& rng) { return request(id, EventSynchronizeRequest{forged(rng)}); }});
  a.push_back({"EventElapsedTime of forged events", Kind::kRefused, kInvalidResourceHandle,
               [](uint64_t id, R& rng) {
                 return request(id, EventElapsedTimeRequest{forged(rng), forged(rng)});
               }});
  a.push_back({"EventDestroy of a forged event", Kind::kRefused, kInvalidResourceHandle,
               [](uint64_t id, R& rng) { return request(id, EventDestroyRequest{forged(rng)}); }});
  a.push_back({"FunctionGet in a forged module", Kind::kRefused, kInvalidResourceHandle,
               [](uint64_t id, R& rng) {
                 const char name[] = "_Z5saxpyifPKfPf";
                 return request(id, FunctionGetRequest{forged(rng)},
                                {reinterpret_cast<const uint8_t*>(name), sizeof name - 1});
               }});
  a.push_back({"VarGet in a forged module", Kind::kRefused, kInvalidResourceHandle,
               [](uint64_t id, R& rng) {
                 const char name[] = "table";
                 return request(id, VarGetRequest{forged(rng), 64},
                                {reinterpret_cast<const uint8_t*>(name), sizeof name - 1});
               }});
  a.push_back({"FuncGetAttributes of a forged function", Kind::kRefused, kInvalidResourceHandle,
               [](uint64_t id, R& rng) { return request(id, FuncGetAttributesRequest{forged(rng)}); }});
  a.push_back({"ModuleUnload of a forged module", Kind::kRefused, kInvalidResourceHandle,
               [](uint64_t id, R& rng) { return request(id, ModuleUnloadRequest{forged(rng)}); }});
  a.push_back({"LaunchKernel of a forged function", Kind::kRefused, kInvalidResourceHandle,
               [](uint64_t id, R& rng) {
                 LaunchKernelRequest r{};
                 r.function = forged(rng);
                 r.grid[0] = r.grid[1] = r.grid[2] = 1;
                 r.block[0] = r.block[1] = r.block[2] = 1;
                 const uint8_t params[16] = {};
                 return request(id, r, params);
               }});
  a.push_back({"Memset on a forged stream", Kind::kRefused, kInvalidResourceHandle,
               [t](uint64_t id, R& rng) {
                 return request(id, MemsetRequest{t.own, 64, forged(rng), 0, 0});
               }});
  // --- device pointers ----------------------------------------------------------------
  if (t.foreign != 0) {
    a.push_back({"MemcpyDtoH from another tenant's pointer", Kind::kRefused, kInvalidValue,
                 [t](uint64_t id, R&) { return request(id, MemcpyDtoHRequest{t.foreign, 0, 4096, 0}); }});
    a.push_back({"MemcpyHtoD into another tenant's pointer", Kind::kRefused, kInvalidValue,
                 [t](uint64_t id, R&) { return request(id, MemcpyHtoDRequest{t.foreign, 0, 4096, 0}); }});
    a.push_back({"MemcpyDtoD from another tenant's pointer", Kind::kRefused, kInvalidValue,
                 [t](uint64_t id, R&) {
                   return request(id, MemcpyDtoDRequest{t.own, t.foreign, 4096, 0});
                 }});
    a.push_back({"MemcpyDtoD into another tenant's pointer", Kind::kRefused, kInvalidValue,
                 [t](uint64_t id, R&) {
                   return request(id, MemcpyDtoDRequest{t.foreign, t.own, 4096, 0});
                 }});
    a.push_back({"Memset on another tenant's pointer", Kind::kRefused, kInvalidValue,
                 [t](uint64_t id, R&) { return request(id, MemsetRequest{t.foreign, 4096, 0, 0, 0}); }});
    a.push_back({"Free of another tenant's pointer", Kind::kRefused, kInvalidValue,
                 [t](uint64_t id, R&) { return request(id, FreeRequest{t.foreign}); }});
  }
  a.push_back({"Memset on a freed pointer", Kind::kRefused, kInvalidValue,
               [t](uint64_t id, R&) { return request(id, MemsetRequest{t.freed, 64, 0, 0, 0}); }});
  a.push_back({"Free of a freed pointer", Kind::kRefused, kInvalidValue,
               [t](uint64_t id, R&) { return request(id, FreeRequest{t.freed}); }});
  a.push_back({"Free of an address inside an allocation", Kind::kRefused, kInvalidValue,
               [t](uint64_t id, R&) { return request(id, FreeRequest{t.own + 256}); }});
  a.push_back({"Memset past the end of an allocation", Kind::kRefused, kInvalidValue,
               [t](uint64_t id, R&) {
                 return request(id, MemsetRequest{t.own + 64, t.own_size, 0, 0, 0});
               }});
  a.push_back({"MemcpyDtoH from a made-up address", Kind::kRefused, kInvalidValue,
               [](uint64_t id, R& rng) {
                 return request(id, MemcpyDtoHRequest{rng() & ~0xffull, 0, 256, 0});
               }});
  // --- data-area ranges ----------------------------------------------------------------
  a.push_back({"MemcpyHtoD from past the data area's end", Kind::kRefused, kInvalidValue,
               [t](uint64_t id, R&) {
                 return request(id, MemcpyHtoDRequest{t.own, t.data_size - 8, 4096, 0});
               }});
  a.push_back({"MemcpyDtoH to an offset outside the data area", Kind::kRefused, kInvalidValue,
               [t](uint64_t id, R&) {
                 return request(id, MemcpyDtoHRequest{t.own, 1ull << 63, 16, 0});
               }});
  a.push_back({"MemcpyHtoD of a size that wraps around", Kind::kRefused, kInvalidValue,
               [t](uint64_t id, R&) { return request(id, MemcpyHtoDRequest{t.own, 64, ~0ull - 31, 0}); }});
  a.push_back({"ModuleLoad from outside the data area", Kind::kRefused, kInvalidValue,
               [t](uint64_t id, R&) { return request(id, ModuleLoadRequest{t.data_size, 4096}); }});
  a.push_back({"ModuleLoad of random bytes", Kind::kRefused, -1, [t](uint64_t id, R&) {
                 // Bytes [own_size, own_size + 4096) of the data area hold random junk.
                 return request(id, ModuleLoadRequest{t.data_size / 2, 4096});
               }});
  // --- values ---------------------------------------------------------------------------
  a.push_back({"Malloc larger than the device", Kind::kRefused, kMemoryAllocation,
               [](uint64_t id, R&) { return request(id, MallocRequest{1ull << 62}); }});
  a.push_back({"GetDeviceProperties of device 7", Kind::kRefused, kInvalidDevice,
               [](uint64_t id, R&) { return request(id, GetDevicePropertiesRequest{7, 0}); }});
  a.push_back({"DeviceGetAttribute of an unknown attribute", Kind::kRefused, kInvalidValue,
               [](uint64_t id, R&) { return request(id, DeviceGetAttributeRequest{99999, 0}); }});
  a.push_back({"StreamCreate with unknown flags", Kind::kRefused, kInvalidValue,
               [](uint64_t id, R&) { return request(id, StreamCreateRequest{0xff, 0}); }});
  a.push_back({"EventCreate with unknown flags", Kind::kRefused, kInvalidValue,
               [](uint64_t id, R&) { return request(id, EventCreateRequest{0xff, 0}); }});
  return a;
}

std::string framing_attack(Channel& ch, int which, std::mt19937_64& rng) {
  uint8_t* ring = ch.request_ring();
  const uint32_t size = ch.ring_size();
  const uint32_t head = ch.request_head();
  const uint32_t pos = head & (size - 1);
  auto put_header = [&](uint32_t at, uint16_t opcode, uint64_t id, uint32_t payload_len) {
    vgpu_msg_header h = make_header(opcode, id, 0, payload_len, 0);
    std::memcpy(ring + (at & (size - 1)), &h, sizeof h);
  };
  switch (which % kFramingAttacks) {
    case 0: {  // random bytes where a message belongs
      const uint32_t len = 32 + 8 * static_cast<uint32_t>(rng() % 512);
      for (uint32_t i = 0; i < len; ++i) ring[(pos + i) & (size - 1)] = static_cast<uint8_t>(rng());
      ch.publish_request_head(head + len);
      return "random bytes";
    }
    case 1:  // a head past the whole ring
      ch.publish_request_head(head + size + 8);
      return "head beyond the ring";
    case 2:  // a head that is not a multiple of 8
      put_header(pos, static_cast<uint16_t>(Op::GetDeviceCount), 1, 8);
      ch.publish_request_head(head + 44);
      return "head not 8-aligned";
    case 3:  // a length over the message limit
      put_header(pos, static_cast<uint16_t>(Op::GetDeviceCount), 1, 0xffff0000u);
      ch.publish_request_head(head + 40);
      return "length over the limit";
    case 4:  // a length past what was published
      put_header(pos, static_cast<uint16_t>(Op::Malloc), 1, 4000);
      ch.publish_request_head(head + 40);
      return "length past the head";
    case 5:  // ring padding of the wrong size
      put_header(pos, VGPU_OP_PAD, 0, 64);
      ch.publish_request_head(head + 96);
      return "padding of the wrong size";
    case 6:  // the head moved backwards
      ch.publish_request_head(head - 8);
      return "head moved backwards";
    default: {  // the reply ring's consumer index forged, then a request to answer
      std::atomic_ref<uint32_t>(ch.header()->resp.tail).store(0x8000'0004u, std::memory_order_release);
      const std::vector<uint8_t> m = request(1, GetDeviceCountRequest{});
      ch.try_send(m);
      return "reply ring tail forged";
    }
  }
}

}  // namespace vgpu::testvm
