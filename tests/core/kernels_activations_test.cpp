// The activation quantizers of every SIMD level produce the same values as
// the scalar definition (kernels/matmul_task.h); the AVX-512 Q8 form stores
// them offset by +128.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/cpu_features.h"
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

TEST(KernelActivations, Q8IdenticalAtEveryLevel) {
  const int64_t n_tokens = 3, cols = 768;
  const std::vector<float> x = awkward_activations(n_tokens, cols);
  std::vector<int8_t> q_ref(size_t(n_tokens * cols)), q(q_ref.size());
  std::vector<float> d_ref(size_t(n_tokens * cols / 32)), d(d_ref.size());
  quantize_activations_q8_scalar(x.data(), cols, 0, n_tokens, q_ref.data(), d_ref.data());
  // Spot-check the definition on the tie block: x * 127/amax with amax = 1.5.
  EXPECT_EQ(d_ref[1280 / 32], 1.5f / 127.0f);
  if (cpu_features().avx2 && cpu_features().fma && cpu_features().f16c) {
    quantize_activations_q8_avx2(x.data(), cols, 0, n_tokens, q.data(), d.data());
    EXPECT_EQ(q, q_ref);
    EXPECT_EQ(d, d_ref);
  }
  if (simd_level() == SimdLevel::Avx512) {
    quantize_activations_q8_avx512(x.data(), cols, 0, n_tokens, q.data(), d.data());
    for (size_t i = 0; i < q.size(); ++i) ASSERT_EQ(int8_t(q[i] ^ 0x80), q_ref[i]) << i;
    EXPECT_EQ(d, d_ref);
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

TEST(KernelActivations, OnlyTheRequestedTokensAreWritten) {
  const int64_t cols = 64;
  const std::vector<float> x = awkward_activations(3, 768);  // read as [4][64]
  std::vector<int8_t> q(4 * cols, 99);
  std::vector<float> d(4 * 2, 99.0f);
  quantize_activations_q8_scalar(x.data(), cols, 1, 3, q.data(), d.data());
  for (int i = 0; i < cols; ++i) EXPECT_EQ(q[size_t(i)], 99);
  for (int i = 3 * cols; i < 4 * cols; ++i) EXPECT_EQ(q[size_t(i)], 99);
  EXPECT_EQ(d[0], 99.0f);
  EXPECT_EQ(d[7], 99.0f);
  EXPECT_NE(d[2], 99.0f);
}

}  // namespace
}  // namespace kvforge
