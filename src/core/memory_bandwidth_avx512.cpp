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

// Four accumulators over 256 bytes per step keep four cache lines in flight
// per iteration; the tail (bytes a multiple of 64) one line at a time.
uint64_t memory_read_sum_avx512(const void* data, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = 0;
  for (; i + 256 <= bytes; i += 256) {
    a0 = _mm512_add_epi64(a0, _mm512_load_si512(p + i));
    a1 = _mm512_add_epi64(a1, _mm512_load_si512(p + i + 64));
    a2 = _mm512_add_epi64(a2, _mm512_load_si512(p + i + 128));
    a3 = _mm512_add_epi64(a3, _mm512_load_si512(p + i + 192));
  }
  for (; i + 64 <= bytes; i += 64) a0 = _mm512_add_epi64(a0, _mm512_load_si512(p + i));
  return hsum_epi64(_mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
}

}  // namespace kvforge
