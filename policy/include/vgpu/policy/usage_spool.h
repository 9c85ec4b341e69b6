// A host's usage batches that the store could not take (its database
// unreachable, locked or failing), kept in a small SQLite file of the host's
// own until they are replayed, oldest first, each under the number it was
// given (Store::record_host_usage applies a batch once, so a replay after a
// commit whose answer was lost counts nothing twice). The file outlives the
// daemon: batches buffered before a crash or a restart are replayed after it.
//
// Not thread-safe: the usage flusher serialises calls.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "vgpu/policy/store.h"
#include "vgpu/result.h"

namespace vgpu::policy {

class UsageSpool {
 public:
  virtual ~UsageSpool() = default;
  // Keeps batch `seq` (numbers increase with time; one batch per number).
  virtual Result put(int64_t seq, std::span<const UsageRecord> batch) = 0;
  // The oldest batch kept; *seq 0 when there is none.
  virtual Result oldest(int64_t* seq, std::vector<UsageRecord>* batch) = 0;
  // Forgets batch `seq` (it is in the store).
  virtual Result remove(int64_t seq) = 0;
  // Moves batch `seq` out of the queue into the file's `set_aside` table,
  // with why: a batch the store refuses (it names a VM the database does not
  // know, after vgpud was pointed at another database) must not hold up the
  // batches behind it, nor be lost.
  virtual Result set_aside(int64_t seq, const std::string& why) = 0;
  // How many batches are kept, and the highest number given to any (0: none).
  virtual Result pending(int64_t* batches, int64_t* max_seq) = 0;
};

// Opens (creating) the spool at `path`. kStorage if it cannot.
Result open_usage_spool(const std::string& path, std::unique_ptr<UsageSpool>* out);

}  // namespace vgpu::policy
