#include "dma_copy.h"

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace vgpu::executor::sim {
namespace {

#if defined(__SSE2__)
constexpr uint64_t kPage = 4096;

// One 64-byte line, loaded unaligned, stored around the caches (dst aligned).
inline void stream_line(uint8_t* dst, const uint8_t* src) {
  const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16));
  const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 32));
  const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 48));
  _mm_stream_si128(reinterpret_cast<__m128i*>(dst), a);
  _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 16), b);
  _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 32), c);
  _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 48), d);
}

void stream_copy(uint8_t* dst, const uint8_t* src, uint64_t size) {
  // Up to the destination's next page boundary the ordinary way.
  const uint64_t head = (kPage - (reinterpret_cast<uintptr_t>(dst) & (kPage - 1))) & (kPage - 1);
  std::memcpy(dst, src, head);
  dst += head;
  src += head;
  size -= head;
  // Four pages at a time, a line of each in turn: four read streams keep the
  // hardware prefetchers busy (the same pattern as glibc's large memcpy).
  uint64_t i = 0;
  for (; i + 4 * kPage <= size; i += 4 * kPage) {
    for (uint64_t line = 0; line < kPage; line += 64) {
      for (uint64_t p = 0; p < 4 * kPage; p += kPage) stream_line(dst + i + p + line, src + i + p + line);
    }
  }
  for (; i + 64 <= size; i += 64) stream_line(dst + i, src + i);
  _mm_sfence();  // the streamed stores are visible before the copy reports done
  std::memcpy(dst + i, src + i, size - i);
}
#endif

}  // namespace

void dma_copy(uint8_t* dst, const uint8_t* src, uint64_t size) {
  if (size == 0) return;  // either pointer may then be null
#if defined(__SSE2__)
  if (size >= kDmaStreamingMin) {
    stream_copy(dst, src, size);
    return;
  }
#endif
  std::memcpy(dst, src, size);
}

}  // namespace vgpu::executor::sim
