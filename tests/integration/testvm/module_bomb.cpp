#include "module_bomb.h"

#include <zstd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "pipeline.h"

namespace vgpu::testvm {
namespace {

using Clock = std::chrono::steady_clock;

void put_le(std::vector<uint8_t>* b, size_t at, size_t width, uint64_t v) {
  for (size_t i = 0; i < width; ++i) (*b)[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

// A zstd frame of `size` zero bytes, its content size recorded; built in
// 1 MiB steps, so that a 1 GiB frame needs no 1 GiB buffer here.
std::vector<uint8_t> zeros_frame(uint64_t size) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setPledgedSrcSize(cctx, size);
  const std::vector<uint8_t> block(1 << 20, 0);
  std::vector<uint8_t> out(ZSTD_CStreamOutSize());
  std::vector<uint8_t> frame;
  for (uint64_t done = 0;;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(block.size(), size - done));
    done += n;
    const bool last = done == size;
    ZSTD_inBuffer in{block.data(), n, 0};
    for (;;) {
      ZSTD_outBuffer o{out.data(), out.size(), 0};
      const size_t left = ZSTD_compressStream2(cctx, &o, &in, last ? ZSTD_e_end : ZSTD_e_continue);
      frame.insert(frame.end(), out.data(), out.data() + o.pos);
      if (ZSTD_isError(left)) {
        ZSTD_freeCCtx(cctx);
        return {};
      }
      if (last ? left == 0 : in.pos == in.size) break;
    }
    if (last) break;
  }
  ZSTD_freeCCtx(cctx);
  return frame;
}

// A fat binary (protocol/fatbin/FORMAT.md) of `entries` ELF entries, each
// the same zstd frame of `each` zero bytes.
std::vector<uint8_t> bomb(int entries, uint64_t each) {
  const std::vector<uint8_t> frame = zeros_frame(each);
  const size_t padded = (frame.size() + 7) / 8 * 8;
  std::vector<uint8_t> b(16);
  put_le(&b, 0, 4, 0xBA55ED50);
  put_le(&b, 4, 2, 1);
  put_le(&b, 6, 2, 16);
  for (int i = 0; i < entries; ++i) {
    const size_t at = b.size();
    b.resize(at + 64 + padded);
    put_le(&b, at + 0, 2, 2);  // ELF
    put_le(&b, at + 2, 2, 0x101);
    put_le(&b, at + 4, 4, 64);
    put_le(&b, at + 8, 8, padded);
    put_le(&b, at + 16, 4, frame.size());
    put_le(&b, at + 28, 4, 90);
    put_le(&b, at + 40, 8, 0x8011);  // zstd, Linux, 64-bit
    put_le(&b, at + 56, 8, each);
    std::memcpy(b.data() + at + 64, frame.data(), frame.size());
  }
  put_le(&b, 8, 8, b.size() - 16);
  return b;
}

}  // namespace

int run_bomb(Channel& ch, double seconds) {
  const std::vector<uint8_t> within = bomb(4, 60ull << 20), over = bomb(4, 1ull << 30);
  std::span<uint8_t> data = ch.data();
  if (within.size() + over.size() > data.size()) {
    std::printf("RESULT fail: the data area is too small\n");
    return 1;
  }
  std::memcpy(data.data(), within.data(), within.size());
  std::memcpy(data.data() + within.size(), over.data(), over.size());
  Pipeline p(ch, 8);
  std::printf("loading\n");
  std::fflush(stdout);
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  uint64_t loads = 0;
  while (Clock::now() < end) {
    const bool big = loads % 8 == 7;
    const proto::ModuleLoadRequest r = big ? proto::ModuleLoadRequest{within.size(), over.size()}
                                           : proto::ModuleLoadRequest{0, within.size()};
    if (!p.submit([&](uint64_t id) { return request(id, r); },
                  {big ? "ModuleLoad over the limit" : "ModuleLoad of 240 MiB", Kind::kRefused, -1, {}})) {
      std::printf("RESULT fail: the channel went away\n");
      return 1;
    }
    loads++;
  }
  const bool drained = p.drain(std::chrono::seconds(120));
  const Tally& t = p.tally();
  std::printf("loads %llu\nfat_binary_bytes %zu\nreplies %llu\nwrong %llu\nlost %llu\n",
              static_cast<unsigned long long>(loads), within.size(),
              static_cast<unsigned long long>(t.replies), static_cast<unsigned long long>(t.wrong),
              static_cast<unsigned long long>(t.lost));
  if (!drained || t.wrong != 0 || t.lost != 0 || t.unexpected != 0) {
    std::printf("RESULT fail: loads answered wrongly or not at all\n");
    return 1;
  }
  std::printf("RESULT ok\n");
  return 0;
}

}  // namespace vgpu::testvm
