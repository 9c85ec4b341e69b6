#include "pipeline.h"

namespace vgpu::testvm {

using namespace std::chrono_literals;

bool Pipeline::submit(const std::function<std::vector<uint8_t>(uint64_t)>& build, Expect expect) {
  while (expected_.size() >= window_) {
    if (!take_reply(10s)) return false;
  }
  const uint64_t id = next_id_++;
  const std::vector<uint8_t> m = build(id);
  tally_.sent[static_cast<int>(expect.kind)]++;
  expected_.emplace(id, std::move(expect));
  return ch_.send(m, 10s);
}

bool Pipeline::take_reply(std::chrono::milliseconds limit) {
  if (!ch_.receive(&buffer_, limit)) return false;
  judge(buffer_);
  return true;
}

void Pipeline::judge(const std::vector<uint8_t>& reply) {
  tally_.replies++;
  const vgpu_msg_header h = header_of(reply);
  auto it = expected_.find(h.request_id);
  if (it == expected_.end() || !(h.flags & VGPU_MSG_REPLY)) {
    tally_.unexpected++;
    return;
  }
  const Expect e = std::move(it->second);
  expected_.erase(it);
  const std::span<const uint8_t> payload(reply.data() + sizeof h, h.payload_len);
  bool right = false;
  if (e.kind == Kind::kHonest) {
    right = h.status == 0 && (!e.check || e.check(payload));
  } else {
    right = h.status != 0 && payload.empty() && (e.status < 0 || h.status == e.status);
  }
  if (!right) {
    tally_.wrong++;
    tally_.wrong_by_what[e.what + " (status " + std::to_string(h.status) + ")"]++;
  }
  last_id_ = h.request_id;
  last_status_ = h.status;
  last_payload_.assign(payload.begin(), payload.end());
}

bool Pipeline::drain(std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!expected_.empty()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !take_reply(left)) {
      tally_.lost += expected_.size();
      for (const auto& [id, e] : expected_) tally_.wrong_by_what["lost: " + e.what]++;
      expected_.clear();
      return false;
    }
  }
  return true;
}

bool Pipeline::call(const std::function<std::vector<uint8_t>(uint64_t)>& build,
                    const std::string& what, std::vector<uint8_t>* reply) {
  const uint64_t id = next_id_;
  if (!submit(build, {what, Kind::kHonest, -1, nullptr})) return false;
  while (expected_.count(id)) {
    if (!take_reply(30s)) {
      tally_.lost++;
      expected_.erase(id);
      return false;
    }
  }
  if (last_id_ != id || last_status_ != 0) return false;
  if (reply) *reply = last_payload_;
  return true;
}

}  // namespace vgpu::testvm
