// Requests in flight on one channel, each with what its reply must be, and
// the tally vgpu-test-vm reports: every request answered exactly once, with
// the expected kind of answer.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "channel.h"
#include "vgpu/protocol/codec.h"

namespace vgpu::testvm {

// How the daemon must classify a request (and count it, daemon_status.h).
enum class Kind {
  kHonest,     // must succeed
  kMalformed,  // refused by the decoder (or names a client it cannot be): an error reply
  kRefused,    // well-formed, invalid fields: an error reply
};

struct Expect {
  std::string what;
  Kind kind = Kind::kHonest;
  int32_t status = -1;  // for errors: the exact status, or -1 for any error
  // Honest replies: called with the reply payload; false is a wrong answer.
  std::function<bool(std::span<const uint8_t>)> check;
};

// A whole request message: header + request struct + tail.
template <class Request>
std::vector<uint8_t> request(uint64_t id, const Request& r, std::span<const uint8_t> tail = {},
                             uint32_t flags = 0) {
  std::vector<uint8_t> m(proto::request_size<proto::OpOf<Request>::value>(tail.size()));
  proto::encode_request(m, id, flags, r, tail);
  return m;
}

inline vgpu_msg_header header_of(const std::vector<uint8_t>& m) {
  vgpu_msg_header h;
  std::memcpy(&h, m.data(), sizeof h);
  return h;
}
inline void set_header(std::vector<uint8_t>* m, const vgpu_msg_header& h) {
  std::memcpy(m->data(), &h, sizeof h);
}

struct Tally {
  uint64_t sent[3] = {0, 0, 0};  // by Kind
  uint64_t replies = 0;
  uint64_t unexpected = 0;  // a reply to no request in flight (duplicate or made up)
  uint64_t wrong = 0;       // a reply other than expected
  uint64_t lost = 0;        // no reply within the limit
  std::map<std::string, uint64_t> wrong_by_what;
};

class Pipeline {
 public:
  Pipeline(Channel& ch, size_t window) : ch_(ch), window_(window) {}

  // Sends the request `build(id)` makes; waits for replies while `window`
  // requests are in flight. False if the channel is gone.
  bool submit(const std::function<std::vector<uint8_t>(uint64_t id)>& build, Expect expect);
  // Waits until every request is answered (or `limit` passes: those are lost).
  bool drain(std::chrono::milliseconds limit);
  // One honest request, answered before this returns; its reply payload in *reply.
  bool call(const std::function<std::vector<uint8_t>(uint64_t id)>& build, const std::string& what,
            std::vector<uint8_t>* reply);
  const Tally& tally() const { return tally_; }
  size_t in_flight() const { return expected_.size(); }

 private:
  bool take_reply(std::chrono::milliseconds limit);
  void judge(const std::vector<uint8_t>& reply);

  Channel& ch_;
  const size_t window_;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, Expect> expected_;
  std::vector<uint8_t> buffer_;
  std::vector<uint8_t> last_payload_;
  uint64_t last_id_ = 0;
  int32_t last_status_ = 0;
  Tally tally_;
};

}  // namespace vgpu::testvm
