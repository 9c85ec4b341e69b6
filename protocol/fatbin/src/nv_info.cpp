#include "nv_info.h"

#include <algorithm>
#include <vector>

namespace vgpu::fatbin::detail {
namespace {

// Record formats: NVAL (no value), BVAL (byte), HVAL (half word) are 4 bytes
// long, the value in the u16; SVAL carries the u16 as the length of the data
// that follows.
constexpr uint8_t kFmtNval = 1, kFmtHval = 3, kFmtSval = 4;
constexpr uint8_t kAttrKparamInfo = 0x17;     // SVAL, 12 bytes, one per parameter
constexpr uint8_t kAttrCbankParamSize = 0x19; // HVAL: total parameter bytes
constexpr uint8_t kAttrKparamInfoV2 = 0x45;   // SVAL, 12 bytes: kernels with > 4 KB of parameters
constexpr uint8_t kAttrCtaPerCluster = 0x3d;  // SVAL, 3 x u32: __cluster_dims__
constexpr uint8_t kAttrMaxThreads = 0x05;     // SVAL, 3 x u32: __launch_bounds__'s block bound

struct ParamRecord {
  uint32_t ordinal = 0;
  Param param;
};

// Both forms start u32 index, u16 ordinal, u16 offset. KPARAM_INFO then has
// u32 flags with the size in its top 14 bits (flags >> 18); KPARAM_INFO_V2,
// which nvcc uses once a kernel's parameters pass 4 KB, has a plain u16 size
// (then u16 attributes).
bool read_kparam(Bytes data, bool v2, ParamRecord* r) {
  uint16_t ordinal = 0, offset = 0, size_v2 = 0;
  uint32_t flags = 0;
  if (!load_le(data, 4, &ordinal) || !load_le(data, 6, &offset) || !load_le(data, 8, &flags) ||
      !load_le(data, 8, &size_v2)) {
    return false;
  }
  r->ordinal = ordinal;
  r->param = Param{offset, v2 ? uint32_t{size_v2} : flags >> 18};
  return true;
}

Error layout(const std::vector<ParamRecord>& records, bool has_total, uint32_t total, Kernel* k) {
  const size_t n = records.size();
  std::vector<Param> params(n);
  std::vector<bool> seen(n, false);
  for (const ParamRecord& r : records) {
    if (r.ordinal >= n || seen[r.ordinal]) return Error::kBadElf;  // ordinals are 0..n-1, once each
    seen[r.ordinal] = true;
    params[r.ordinal] = r.param;
  }
  uint32_t end = 0;
  for (const Param& p : params) {
    if (p.offset < end) return Error::kBadElf;  // overlapping or out of order
    end = p.offset + p.size;                    // both < 2^16: no overflow
    if (end > kMaxParamBytes) return Error::kTooLarge;
  }
  // The total must be the end of the last parameter; anything else means
  // records this parser does not know, and a guessed layout would be wrong.
  if (has_total && total != end) return Error::kBadElf;
  k->params = std::move(params);
  k->param_bytes = end;
  return Error::kNone;
}

// x * y * z threads, each at least 1; anything past a block's 1024 is kept
// as is (it bounds nothing then).
bool read_thread_bound(Bytes data, uint32_t* out) {
  uint32_t dims[3] = {0, 0, 0};
  for (int i = 0; i < 3; ++i)
    if (!load_le(data, 4 * i, &dims[i]) || dims[i] == 0 || dims[i] > kMaxThreadBound) return false;
  const uint64_t n = uint64_t{dims[0]} * dims[1] * dims[2];
  *out = static_cast<uint32_t>(std::min<uint64_t>(n, kMaxThreadBound));
  return true;
}

}  // namespace

Error read_kernel_params(Bytes info, Kernel* k) {
  std::vector<ParamRecord> records;
  bool has_total = false;
  uint32_t total = 0;
  uint64_t off = 0;
  while (off < info.size()) {
    uint8_t format = 0, attr = 0;
    uint16_t value = 0;
    if (!load_le(info, off, &format) || !load_le(info, off + 1, &attr) || !load_le(info, off + 2, &value)) {
      return Error::kBadElf;
    }
    if (format < kFmtNval || format > kFmtSval) return Error::kBadElf;
    Bytes data;
    if (format == kFmtSval && !slice(info, off + 4, value, &data)) return Error::kBadElf;
    off += 4 + (format == kFmtSval ? value : 0);

    if ((attr == kAttrKparamInfo || attr == kAttrKparamInfoV2) && format == kFmtSval) {
      if (records.size() >= kMaxParams) return Error::kTooLarge;
      ParamRecord r;
      if (!read_kparam(data, attr == kAttrKparamInfoV2, &r)) return Error::kBadElf;
      records.push_back(r);
    } else if (attr == kAttrCbankParamSize && format == kFmtHval) {
      has_total = true;
      total = value;
    } else if (attr == kAttrCtaPerCluster && format == kFmtSval) {
      if (!load_le(data, 0, &k->cluster[0]) || !load_le(data, 4, &k->cluster[1]) ||
          !load_le(data, 8, &k->cluster[2]) || !valid_cluster(k->cluster))
        return Error::kBadElf;
    } else if (attr == kAttrMaxThreads && format == kFmtSval) {
      if (!read_thread_bound(data, &k->max_threads)) return Error::kBadElf;
    }
  }
  return layout(records, has_total, total, k);
}

}  // namespace vgpu::fatbin::detail
