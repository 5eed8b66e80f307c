#include "core/memory_bandwidth.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <new>
#include <random>
#include <vector>

#include "core/cpu_features.h"

namespace kvforge {
namespace {

// The read loop must visit every word once, at every SIMD level, for sizes
// that exercise its main loop (at AVX-512: eight streams of 256-byte steps,
// with and without the prefetch 2 KiB ahead) and its 64-byte tail.
TEST(MemoryBandwidthTest, ReadSumCountsEveryWordAtEveryLevel) {
  const SimdLevel machine = simd_level();
  std::mt19937_64 rng(7);
  for (size_t bytes :
       {size_t(64), size_t(192), size_t(256), size_t(4096 + 64 * 3), size_t(64 * 1601)}) {
    auto* words = static_cast<uint64_t*>(::operator new[](bytes, std::align_val_t(64)));
    uint64_t expected = 0;
    for (size_t i = 0; i < bytes / 8; ++i) expected += (words[i] = rng());
    for (SimdLevel level : {SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512}) {
      set_simd_level(level);
      EXPECT_EQ(memory_read_sum(words, bytes), expected)
          << bytes << " bytes at " << simd_level_name(simd_level());
    }
    ::operator delete[](words, std::align_val_t(64));
  }
  set_simd_level(machine);
}

TEST(MemoryBandwidthTest, ProbeReportsPlausibleFigures) {
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    const ReadBandwidth bw = measure_read_bandwidth(pool, (size_t(8) << 20) + 100, 2);
    EXPECT_EQ(bw.buffer_bytes, (size_t(8) << 20) + 128);  // rounded up to 64
    EXPECT_EQ(bw.passes, 2);
    // Anything below 100 MB/s or above 10 TB/s means the timing or the byte count is wrong.
    EXPECT_GT(bw.best_bytes_per_second, 1e8);
    EXPECT_LT(bw.best_bytes_per_second, 1e13);
    EXPECT_LE(bw.mean_bytes_per_second, bw.best_bytes_per_second * 1.0001);
  }
}

TEST(MemoryBandwidthTest, RejectsBadArguments) {
  ThreadPool pool(1);
  EXPECT_THROW(measure_read_bandwidth(pool, 1024, 0), std::invalid_argument);
  EXPECT_THROW(measure_read_bandwidth(pool, 0, 1), std::invalid_argument);
}

}  // namespace
}  // namespace kvforge
