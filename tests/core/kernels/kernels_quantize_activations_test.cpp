// The activation quantizers of every SIMD level produce the same values as
// the scalar definition (kernels/matmul_task.h); the AVX-512 Q8 form stores
// them in its quad layout, with lane sums.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "core/cpu_features.h"
#include "core/formats/f16.h"
#include "core/kernels/matmul_task.h"

namespace kvforge {
namespace {

// n_tokens * cols must be at least 1312.
std::vector<float> awkward_activations(int64_t n_tokens, int64_t cols) {
  std::mt19937 rng(17);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(size_t(n_tokens * cols));
  for (float& v : x) v = dist(rng);
  std::fill(x.begin() + 256, x.begin() + 512, 0.0f);        // all-zero blocks
  for (int i = 512; i < 768; ++i) x[size_t(i)] = 1e-35f;    // below the 1e-30 cutoff
  for (int i = 768; i < 1024; ++i) x[size_t(i)] *= 1e-20f;  // tiny but representable
  x[1030] = -300.0f;                                        // outlier, negative
  for (int i = 1280; i < 1312; ++i) x[size_t(i)] = float(i % 7) * 0.5f - 1.5f;  // exact ties
  return x;
}

// The AVX-512 quad layout read back into [n][cols] order, checking the
// padding blocks (zero quants, zero scales) and the lane sums on the way.
void expect_quad_layout_matches(const std::vector<float>& x, int64_t n_tokens, int64_t cols,
                                const std::vector<int8_t>& q_ref, const std::vector<float>& d_ref) {
  const int64_t n_blocks = cols / 32, quads = (n_blocks + 3) / 4;
  std::vector<int8_t> q(size_t(n_tokens * quads * kQ8QuadBytes), 99);
  std::vector<float> d(size_t(n_tokens * quads * kQ8QuadLanes), 99.0f);
  std::vector<int32_t> s(d.size(), 99);
  quantize_activations_q8_avx512(x.data(), cols, 0, n_tokens, q.data(), d.data(), s.data());
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t quad = 0; quad < quads; ++quad) {
      const int8_t* qq = q.data() + (t * quads + quad) * kQ8QuadBytes;
      for (int lane = 0; lane < 16; ++lane) {
        const int64_t b = 4 * quad + lane / 4;
        const size_t at = size_t((t * quads + quad) * kQ8QuadLanes + lane);
        EXPECT_EQ(d[at], b < n_blocks ? d_ref[size_t(t * n_blocks + b)] : 0.0f)
            << "token " << t << " quad " << quad << " lane " << lane;
        int32_t sum = 0;
        for (int j = 0; j < 4; ++j) {
          for (int half = 0; half < 2; ++half) {
            const int8_t got = qq[64 * half + 4 * lane + j];
            const int64_t e = 16 * half + 4 * (lane % 4) + j;  // element within block b
            const int8_t want = b < n_blocks ? q_ref[size_t(t * cols + 32 * b + e)] : 0;
            ASSERT_EQ(got, want) << "token " << t << " block " << b << " element " << e;
            sum += got;
          }
        }
        EXPECT_EQ(s[at], sum) << "token " << t << " quad " << quad << " lane " << lane;
      }
    }
  }
}

TEST(KernelActivations, Q8IdenticalAtEveryLevel) {
  const int64_t n_tokens = 3, cols = 768;
  const std::vector<float> x = awkward_activations(n_tokens, cols);
  std::vector<int8_t> q_ref(size_t(n_tokens * cols)), q(q_ref.size());
  std::vector<float> d_ref(size_t(n_tokens * cols / 32)), d(d_ref.size());
  quantize_activations_q8_scalar(x.data(), cols, 0, n_tokens, q_ref.data(), d_ref.data(), nullptr);
  // Spot-check the definition on the tie block: x * 127/amax with amax = 1.5,
  // scale f16(1.5/127) as llama.cpp's block_q8_0 stores it.
  EXPECT_EQ(d_ref[1280 / 32], fp16_to_fp32(fp32_to_fp16(1.5f / 127.0f)));
  EXPECT_NE(d_ref[1280 / 32], 1.5f / 127.0f);
  if (cpu_features().avx2 && cpu_features().fma && cpu_features().f16c) {
    quantize_activations_q8_avx2(x.data(), cols, 0, n_tokens, q.data(), d.data(), nullptr);
    EXPECT_EQ(q, q_ref);
    EXPECT_EQ(d, d_ref);
  }
  if (simd_level() == SimdLevel::Avx512)
    expect_quad_layout_matches(x, n_tokens, cols, q_ref, d_ref);
}

// Block counts that leave the last quad 1, 2 or 3 blocks short.
TEST(KernelActivations, Q8QuadLayoutPadsTheLastQuad) {
  if (simd_level() != SimdLevel::Avx512) GTEST_SKIP() << "no AVX-512 on this machine";
  for (int64_t cols : {32, 64, 96, 160, 1312}) {
    SCOPED_TRACE("cols " + std::to_string(cols));
    const int64_t n_tokens = (1312 + cols - 1) / cols;
    const std::vector<float> x = awkward_activations(n_tokens, cols);
    std::vector<int8_t> q_ref(size_t(n_tokens * cols));
    std::vector<float> d_ref(size_t(n_tokens * cols / 32));
    quantize_activations_q8_scalar(x.data(), cols, 0, n_tokens, q_ref.data(), d_ref.data(),
                                   nullptr);
    expect_quad_layout_matches(x, n_tokens, cols, q_ref, d_ref);
  }
}

TEST(KernelActivations, Q8KIdenticalAtEveryLevel) {
  const int64_t n_tokens = 3, cols = 1024;
  const std::vector<float> x = awkward_activations(n_tokens, cols);
  std::vector<BlockQ8_K> ref(size_t(n_tokens * cols / 256)), got(ref.size());
  quantize_activations_q8_k_scalar(x.data(), cols, 0, n_tokens, ref.data());
  auto same = [&](const char* level) {
    for (size_t b = 0; b < ref.size(); ++b) {
      EXPECT_EQ(got[b].d, ref[b].d) << level << " block " << b;
      EXPECT_EQ(0, std::memcmp(got[b].qs, ref[b].qs, 256)) << level << " block " << b;
      EXPECT_EQ(0, std::memcmp(got[b].bsums, ref[b].bsums, 32)) << level << " block " << b;
    }
  };
  if (cpu_features().avx2 && cpu_features().fma && cpu_features().f16c) {
    quantize_activations_q8_k_avx2(x.data(), cols, 0, n_tokens, got.data());
    same("avx2");
  }
  if (simd_level() == SimdLevel::Avx512) {
    quantize_activations_q8_k_avx512(x.data(), cols, 0, n_tokens, got.data());
    same("avx512");
  }
}

// Q8 blocks (q8_1 for Q4_1 / Q5_1, q8_0 for Q5_0 / IQ4_NL): the Q8 quants and
// scales in the plain layout, plus s = f16(amax/127 * sum of the quants).
TEST(KernelActivations, Q8BlocksIdenticalAtEveryLevelWithLlamaCppSums) {
  const int64_t n_tokens = 3, cols = 768, n_blocks = cols / 32;
  const std::vector<float> x = awkward_activations(n_tokens, cols);
  std::vector<int8_t> q8(size_t(n_tokens * cols)), q_ref(q8.size()), q(q8.size());
  std::vector<float> d8(size_t(n_tokens * n_blocks)), d_ref(d8.size()), d(d8.size());
  std::vector<float> s_ref(d8.size()), s(d8.size());
  quantize_activations_q8_scalar(x.data(), cols, 0, n_tokens, q8.data(), d8.data(), nullptr);
  quantize_activations_q8_blocks_scalar(x.data(), cols, 0, n_tokens, q_ref.data(), d_ref.data(),
                                        s_ref.data());
  EXPECT_EQ(q_ref, q8);
  EXPECT_EQ(d_ref, d8);
  for (int64_t b = 0; b < n_tokens * n_blocks; ++b) {
    float amax = 0.0f;
    int32_t sum = 0;
    for (int i = 0; i < 32; ++i) {
      amax = std::max(amax, std::fabs(x[size_t(32 * b + i)]));
      sum += q_ref[size_t(32 * b + i)];
    }
    const float dd = amax < 1e-30f ? 0.0f : amax / 127.0f;
    ASSERT_EQ(s_ref[size_t(b)], fp16_to_fp32(fp32_to_fp16(dd * float(sum)))) << "block " << b;
  }
  auto same = [&](const char* level) {
    EXPECT_EQ(q, q_ref) << level;
    EXPECT_EQ(d, d_ref) << level;
    EXPECT_EQ(s, s_ref) << level;
  };
  if (cpu_features().avx2 && cpu_features().fma && cpu_features().f16c) {
    quantize_activations_q8_blocks_avx2(x.data(), cols, 0, n_tokens, q.data(), d.data(), s.data());
    same("avx2");
  }
  if (simd_level() == SimdLevel::Avx512) {
    quantize_activations_q8_blocks_avx512(x.data(), cols, 0, n_tokens, q.data(), d.data(),
                                          s.data());
    same("avx512");
  }
}

// Two elements of the same largest magnitude and opposite signs: the first
// one's sign decides d's, at every level (llama.cpp's quantize_row_q8_K_ref).
TEST(KernelActivations, Q8KSignOfTheFirstLargestElementAtEveryLevel) {
  for (const float first : {2.0f, -2.0f}) {
    std::vector<float> x(256, 0.25f);
    x[37] = first;
    x[200] = -first;
    BlockQ8_K ref, got;
    quantize_activations_q8_k_scalar(x.data(), 256, 0, 1, &ref);
    EXPECT_EQ(ref.d, 1.0f / (-127.0f / first));
    EXPECT_EQ(ref.qs[37], -127);
    EXPECT_EQ(ref.qs[200], 127);
    if (cpu_features().avx2 && cpu_features().fma && cpu_features().f16c) {
      quantize_activations_q8_k_avx2(x.data(), 256, 0, 1, &got);
      EXPECT_EQ(got.d, ref.d);
      EXPECT_EQ(0, std::memcmp(got.qs, ref.qs, 256));
    }
    if (simd_level() == SimdLevel::Avx512) {
      quantize_activations_q8_k_avx512(x.data(), 256, 0, 1, &got);
      EXPECT_EQ(got.d, ref.d);
      EXPECT_EQ(0, std::memcmp(got.qs, ref.qs, 256));
    }
  }
}

TEST(KernelActivations, OnlyTheRequestedTokensAreWritten) {
  const int64_t cols = 64;
  const std::vector<float> x = awkward_activations(3, 768);  // read as [4][64]
  std::vector<int8_t> q(4 * cols, 99);
  std::vector<float> d(4 * 2, 99.0f);
  quantize_activations_q8_scalar(x.data(), cols, 1, 3, q.data(), d.data(), nullptr);
  for (int i = 0; i < cols; ++i) EXPECT_EQ(q[size_t(i)], 99);
  for (int i = 3 * cols; i < 4 * cols; ++i) EXPECT_EQ(q[size_t(i)], 99);
  EXPECT_EQ(d[0], 99.0f);
  EXPECT_EQ(d[7], 99.0f);
  EXPECT_NE(d[2], 99.0f);
}

}  // namespace
}  // namespace kvforge
