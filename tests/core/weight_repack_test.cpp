// Q4_0 rows regrouped for the AVX-512 kernel (kernels/weight_repack.h): the
// layout is the one WeightLayout documents, the kernel's products are bitwise
// those of the native layout, and the levels that cannot read it say so.
#include "core/kernels/weight_repack.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/formats/q4_0.h"
#include "core/threadpool.h"

namespace kvforge {
namespace weight_repack_test {  // named: the tests build in unity batches (tests/CMakeLists.txt)

std::vector<uint8_t> random_q4_0(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(size_t(rows * cols));
  for (float& v : x) v = dist(rng);
  std::vector<uint8_t> bytes(size_t(rows * cols / 32) * sizeof(BlockQ4_0));
  quantize_row_q4_0(x.data(), reinterpret_cast<BlockQ4_0*>(bytes.data()), rows * cols);
  return bytes;
}

struct LevelGuard {
  SimdLevel saved = simd_level();
  ~LevelGuard() { set_simd_level(saved); }
};

TEST(WeightRepack, Q4_0Groups8HoldsEachGroupsScalesThenItsNibbles) {
  const int64_t rows = 3, cols = 512;  // 16 blocks per row: 2 groups
  const std::vector<uint8_t> native = random_q4_0(rows, cols, 1);
  std::vector<uint8_t> packed(native.size());
  repack_q4_0_groups8(native.data(), rows, cols, packed.data());
  const auto* blocks = reinterpret_cast<const BlockQ4_0*>(native.data());
  for (int64_t b = 0; b < rows * cols / 32; ++b) {
    const uint8_t* group = packed.data() + (b / 8) * 144;  // 8 blocks x 18 bytes
    uint16_t d;
    std::memcpy(&d, group + 2 * (b % 8), 2);
    EXPECT_EQ(d, blocks[b].d) << "block " << b;
    EXPECT_EQ(0, std::memcmp(group + 16 + 16 * (b % 8), blocks[b].qs, 16)) << "block " << b;
  }
}

TEST(WeightRepack, OnlyWholeGroupsOf8BlocksFit) {
  EXPECT_TRUE(q4_0_groups8_fits(256));
  EXPECT_TRUE(q4_0_groups8_fits(11008));
  EXPECT_FALSE(q4_0_groups8_fits(288));
  EXPECT_FALSE(q4_0_groups8_fits(0));
  std::vector<uint8_t> buf(9 * 18);
  try {
    repack_q4_0_groups8(buf.data(), 1, 288, buf.data());
    FAIL() << "288 columns accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("288"), std::string::npos) << e.what();
  }
}

// The AVX-512 kernel on the regrouped rows gives exactly the native kernel's
// bits, for decode (1-2 tokens: 4-row streams and single leftover rows),
// whole and partial 4 x 3 tiles, and threads splitting the rows anywhere.
TEST(WeightRepack, AvxKernelOnQ4_0Groups8IsBitwiseTheNativeLayouts) {
  LevelGuard guard;
  set_simd_level(SimdLevel::Avx512);
  if (simd_level() != SimdLevel::Avx512) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  ASSERT_TRUE(q4_0_groups8_preferred());
  MatmulScratch scratch;
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    for (int64_t rows : {1, 5, 37, 130}) {
      for (int64_t cols : {256, 768}) {
        const std::vector<uint8_t> native = random_q4_0(rows, cols, uint32_t(rows + cols));
        std::vector<uint8_t> packed(native.size());
        repack_q4_0_groups8(native.data(), rows, cols, packed.data());
        const WeightView a{GgmlType::Q4_0, native.data(), rows, cols};
        const WeightView b{GgmlType::Q4_0, packed.data(), rows, cols, WeightLayout::Q4_0Groups8};
        for (int64_t n : {1, 2, 3, 4, 7, 16, 33}) {
          std::mt19937 rng{uint32_t(n)};
          std::normal_distribution<float> dist(0.0f, 1.0f);
          std::vector<float> x(size_t(n * cols));
          for (float& v : x) v = dist(rng);
          std::vector<float> ya(size_t(n * rows)), yb(size_t(n * rows), -1.0f);
          matmul(a, x.data(), n, ya.data(), pool, scratch);
          matmul(b, x.data(), n, yb.data(), pool, scratch);
          ASSERT_EQ(0, std::memcmp(ya.data(), yb.data(), ya.size() * sizeof(float)))
              << "rows " << rows << " cols " << cols << " tokens " << n << " threads " << threads;
        }
      }
    }
  }
}

TEST(WeightRepack, LevelsWithoutTheKernelRefuseTheLayout) {
  LevelGuard guard;
  const int64_t rows = 2, cols = 256;
  const std::vector<uint8_t> packed = random_q4_0(rows, cols, 3);
  const WeightView w{GgmlType::Q4_0, packed.data(), rows, cols, WeightLayout::Q4_0Groups8};
  std::vector<float> x(size_t(cols), 1.0f);
  std::vector<float> y(static_cast<size_t>(rows));
  ThreadPool pool(1);
  MatmulScratch scratch;
  set_simd_level(SimdLevel::Scalar);
  EXPECT_FALSE(q4_0_groups8_preferred());
  try {
    matmul(w, x.data(), 1, y.data(), pool, scratch);
    FAIL() << "the scalar level read a regrouped weight";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("AVX-512"), std::string::npos) << e.what();
  }
  EXPECT_THROW(matmul_reference(w, x.data(), 1, y.data()), std::invalid_argument);
  const WeightView not_q4{GgmlType::Q8_0, packed.data(), rows, cols, WeightLayout::Q4_0Groups8};
  EXPECT_THROW(matmul(not_q4, x.data(), 1, y.data(), pool, scratch), std::invalid_argument);
}

}  // namespace weight_repack_test
}  // namespace kvforge
