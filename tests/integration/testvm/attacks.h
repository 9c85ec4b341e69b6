// The hostile requests vgpu-test-vm sends: well-framed messages whose fields
// lie (forged handles, another tenant's device pointer, data-area ranges
// outside the area, wrong lengths, unknown opcodes and flags), each with the
// answer the daemon owes it; and the framing attacks that break the ring
// rules, after which the daemon must close the channel.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "channel.h"
#include "pipeline.h"

namespace vgpu::testvm {

struct Targets {
  uint64_t own = 0;        // a live allocation of ours, own_size bytes
  uint64_t own_size = 0;
  uint64_t freed = 0;      // an allocation of ours, freed
  uint64_t foreign = 0;    // another tenant's live device pointer (0: none given)
  uint64_t data_size = 0;  // our data area
};

struct FieldAttack {
  std::string what;
  Kind kind;
  int32_t status;  // the exact error, or -1 for any
  std::function<std::vector<uint8_t>(uint64_t id, std::mt19937_64& rng)> build;
};

std::vector<FieldAttack> field_attacks(const Targets& t);

// One framing attack on a fresh channel: writes into the request ring (or the
// reply ring's consumer index) so that the ring rules break. Returns its name.
std::string framing_attack(Channel& ch, int which, std::mt19937_64& rng);
inline constexpr int kFramingAttacks = 8;

}  // namespace vgpu::testvm
