// The sim's copy between host memory and device memory: every byte arrives,
// nothing around the destination changes, at any size and alignment (the
// streaming path from kDmaStreamingMin up has head, four-page and tail parts).
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include "dma_copy.h"

using vgpu::executor::sim::dma_copy;
using vgpu::executor::sim::kDmaStreamingMin;

TEST_CASE("dma_copy copies exactly the bytes asked for, at any alignment") {
  const uint64_t sizes[] = {0,
                            1,
                            63,
                            4096,
                            kDmaStreamingMin - 1,
                            kDmaStreamingMin,
                            kDmaStreamingMin + 4096 * 4 + 65,
                            3 * kDmaStreamingMin + 17};
  const uint64_t guard = 256;
  for (uint64_t size : sizes) {
    for (uint64_t src_skew : {0, 1, 8, 4095}) {
      for (uint64_t dst_skew : {0, 3, 64, 4000}) {
        std::vector<uint8_t> src(size + src_skew);
        for (uint64_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + size);
        std::vector<uint8_t> dst(size + dst_skew + 2 * guard, 0xee);
        dma_copy(dst.data() + guard + dst_skew, src.data() + src_skew, size);
        INFO("size " << size << ", src skew " << src_skew << ", dst skew " << dst_skew);
        bool same = true;
        for (uint64_t i = 0; i < size && same; ++i) same = dst[guard + dst_skew + i] == src[src_skew + i];
        CHECK(same);
        bool untouched = true;
        for (uint64_t i = 0; i < guard + dst_skew; ++i) untouched = untouched && dst[i] == 0xee;
        for (uint64_t i = guard + dst_skew + size; i < dst.size(); ++i)
          untouched = untouched && dst[i] == 0xee;
        CHECK(untouched);
      }
    }
  }
}
