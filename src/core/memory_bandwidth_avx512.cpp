// The bandwidth probe's read loop with 512-bit loads (memory_bandwidth.cpp).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace kvforge {
namespace {

uint64_t hsum_epi64(__m512i v) {
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, v);
  uint64_t s = 0;
  for (uint64_t l : lanes) s += l;
  return s;
}

}  // namespace

// Eight streams, one per eighth of the range, read 256 bytes at a time in
// turn with a software prefetch 2 KiB ahead in each: as the decode kernels
// read several row streams at once. One sequential stream per core leaves
// bandwidth unused on some machines, and a probe slower than the kernels it
// bounds is no roof (figures at memory_bandwidth.h). Whatever does
// not divide into the eight streams' whole steps goes one line at a time.
uint64_t memory_read_sum_avx512(const void* data, size_t bytes) {
  constexpr int kStreams = 8;
  constexpr size_t kStep = 256, kAhead = 2048;
  const auto* p = static_cast<const uint8_t*>(data);
  const size_t part = bytes / kStreams / kStep * kStep;  // bytes per stream
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < part; i += kStep) {
    const bool ahead = i + kAhead < part;
    for (int s = 0; s < kStreams; ++s) {
      const uint8_t* b = p + size_t(s) * part + i;
      if (ahead)
        for (size_t l = 0; l < kStep; l += 64)
          _mm_prefetch(reinterpret_cast<const char*>(b + kAhead + l), _MM_HINT_T0);
      a0 = _mm512_add_epi64(a0, _mm512_load_si512(b));
      a1 = _mm512_add_epi64(a1, _mm512_load_si512(b + 64));
      a2 = _mm512_add_epi64(a2, _mm512_load_si512(b + 128));
      a3 = _mm512_add_epi64(a3, _mm512_load_si512(b + 192));
    }
  }
  for (size_t i = kStreams * part; i + 64 <= bytes; i += 64)
    a0 = _mm512_add_epi64(a0, _mm512_load_si512(p + i));
  return hsum_epi64(_mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
}

}  // namespace kvforge
