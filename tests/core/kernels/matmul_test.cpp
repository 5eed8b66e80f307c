// matmul() at every SIMD level this machine has, every weight type, against
// two oracles:
//  1. matmul_reference (dequantized weights, f32 activations, double sums),
//     within a bound derived from how the kernels quantize activations;
//  2. an emulation of that activation quantization (as documented in
//     kernels/matmul_task.h) with double sums, within f32 rounding only —
//     a much sharper check that catches any misplaced scale or index.
// Plus: results independent of thread count and batch composition (bitwise),
// and K-quant, Q5_0, IQ4_NL and MXFP4 results bitwise identical across SIMD levels.
#include "core/kernels/matmul.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "core/cpu_features.h"
#include "core/formats/f16.h"
#include "core/formats/mxfp4.h"
#include "core/formats/q4_k.h"
#include "core/formats/row_codec.h"
#include "core/kernels/matmul_task.h"
#include "core/kernels/weight_repack.h"
#include "formats_test_util.h"
#include "simd_levels.h"

namespace kvforge {
namespace {

constexpr double kU = 0x1p-24;  // f32 unit roundoff

using testing::available_simd_levels;
using LevelGuard = testing::SimdLevelGuard;

std::vector<float> gaussian(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

struct Weights {
  WeightView view;
  std::vector<uint8_t> bytes;
  std::vector<float> dequantized;  // [rows][cols]
};

Weights make_weights(GgmlType type, int64_t rows, int64_t cols, uint32_t seed) {
  Weights w;
  std::vector<float> src = gaussian(size_t(rows * cols), seed);
  if (rows * cols > 5) src[5] = 9.0f;  // an outlier in the first block
  const size_t rb = row_bytes(type, size_t(cols));
  w.bytes.resize(rb * size_t(rows));
  w.dequantized.resize(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    quantize_row(type, src.data() + r * cols, w.bytes.data() + size_t(r) * rb, cols);
    dequantize_row(type, w.bytes.data() + size_t(r) * rb, w.dequantized.data() + r * cols, cols);
  }
  w.view = WeightView{type, w.bytes.data(), rows, cols};
  return w;
}

// Tokens of different magnitudes, an all-zero 32-block and a large outlier.
std::vector<float> make_activations(int64_t n_tokens, int64_t cols, uint32_t seed) {
  std::vector<float> x = gaussian(size_t(n_tokens * cols), seed);
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t c = 0; c < cols; ++c) x[size_t(t * cols + c)] *= std::ldexp(1.0f, int(t % 5) - 2);
  }
  if (n_tokens > 2 && cols >= 64)
    std::fill(x.begin() + 2 * cols + 32, x.begin() + 2 * cols + 64, 0.0f);
  if (cols > 7) x[7] = 25.0f;
  return x;
}

// Block size of the activation quantization for a weight type (0: none).
int activation_block(GgmlType t) {
  switch (t) {
    case GgmlType::Q8_0:
    case GgmlType::Q4_0:
    case GgmlType::Q5_0:
    case GgmlType::IQ4_NL:
    case GgmlType::MXFP4:
    case GgmlType::Q4_1:
    case GgmlType::Q5_1:
      return 32;
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
    case GgmlType::IQ4_XS:
      return 256;
    default:
      return 0;
  }
}

// Weight types whose blocks carry a min (x = d * q + m): Q4_1 and Q5_1,
// both with m as the f16 at byte 2 of each 32-block.
bool has_block_min(GgmlType t) { return t == GgmlType::Q4_1 || t == GgmlType::Q5_1; }

float block_min(const Weights& w, int64_t r, int64_t b) {
  const TypeTraits traits = type_traits(w.view.type);
  uint16_t h;
  std::memcpy(&h,
              w.bytes.data() + size_t(r) * row_bytes(w.view.type, size_t(w.view.cols)) +
                  size_t(b) * traits.block_bytes + 2,
              2);
  return fp16_to_fp32(h);
}

struct Expected {
  std::vector<float> reference;        // matmul_reference
  std::vector<double> emulated;        // dequantized weights x emulated quantized activations
  std::vector<double> quant_bound;     // derived bound on |kernel - reference|
  std::vector<double> rounding_bound;  // f32 rounding allowance
};

Expected expected_results(const Weights& w, const std::vector<float>& x, int64_t n_tokens) {
  const int64_t rows = w.view.rows, cols = w.view.cols;
  const int block = activation_block(w.view.type);
  Expected e;
  e.reference.resize(size_t(rows * n_tokens));
  matmul_reference(w.view, x.data(), n_tokens, e.reference.data());
  e.emulated.assign(size_t(rows * n_tokens), 0.0);
  e.quant_bound.assign(size_t(rows * n_tokens), 0.0);
  e.rounding_bound.assign(size_t(rows * n_tokens), 0.0);
  // Quantized activations as documented: d = f16(amax/127) (Q8) or
  // 1/(127/amax) (Q8_K, whose sign convention leaves q * d unchanged),
  // q = nearest-even(x * (127/amax)); blocks with amax < 1e-30 are 0.
  std::vector<float> xq(x.size()), half_step(x.size(), 0.0f);
  // Weights with a min (Q8 blocks form): their kernels take m * da * sum(q)
  // as m * s with s = f16(amax/127 * sum(q)) (llama.cpp's block_q8_1 s); per
  // token and block, s - da * sum(q) (exact in double).
  const bool with_min = has_block_min(w.view.type);
  std::vector<double> sum_deviation(with_min ? size_t(n_tokens * cols / 32) : 0, 0.0);
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* xt = x.data() + t * cols;
    if (block == 0) {
      std::copy(xt, xt + cols, xq.begin() + t * cols);
      continue;
    }
    for (int64_t b0 = 0; b0 < cols; b0 += block) {
      float amax = 0;
      for (int i = 0; i < block; ++i) amax = std::max(amax, std::fabs(xt[b0 + i]));
      const float id = amax < 1e-30f ? 0.0f : 127.0f / amax;
      const float d = amax < 1e-30f
                          ? 0.0f
                          : (block == 32 ? fp16_to_fp32(fp32_to_fp16(amax / 127.0f)) : 1.0f / id);
      // |x - q * d| <= (amax/127)/2 + 127 * |d - amax/127| (the f16 rounding of the scale).
      const float step_error = amax / 127.0f / 2.0f + 127.0f * std::fabs(d - amax / 127.0f);
      int32_t sum_q = 0;
      for (int i = 0; i < block; ++i) {
        const float q = std::nearbyint(xt[b0 + i] * id);
        xq[size_t(t * cols + b0 + i)] = q * d;  // exact: |q| <= 127 has 7 bits
        half_step[size_t(t * cols + b0 + i)] = step_error;
        sum_q += int32_t(q);
      }
      if (with_min) {
        const float unrounded = amax < 1e-30f ? 0.0f : amax / 127.0f;
        const float s = fp16_to_fp32(fp32_to_fp16(unrounded * float(sum_q)));
        sum_deviation[size_t(t * (cols / 32) + b0 / 32)] = double(s) - double(d) * sum_q;
      }
    }
  }
  const int64_t n_sums = block ? cols / block + 8 : cols + 8;  // longest f32 addition chain, padded
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t r = 0; r < rows; ++r) {
      double emu = 0, quant = 0, magnitude = 0;
      for (int64_t c = 0; c < cols; ++c) {
        const double wv = w.dequantized[size_t(r * cols + c)];
        const size_t i = size_t(t * cols + c);
        emu += wv * xq[i];
        // |x - xq| <= d/2 (+ f32 rounding of x * id, absorbed by the slack below).
        quant += std::fabs(wv) * half_step[i];
        // With a min the kernels round d*q and m terms of their own, each
        // possibly larger than the weight d*q + m they sum to.
        const double m = with_min ? block_min(w, r, c / 32) : 0.0;
        magnitude += (std::fabs(wv - m) + std::fabs(m)) * (std::fabs(x[i]) + half_step[i]);
      }
      for (int64_t b = 0; with_min && b < cols / 32; ++b) {
        // The min term's deviation, exactly: the emulation follows it, the
        // reference (f32 activations) differs from the kernel by it too.
        const double deviation = block_min(w, r, b) * sum_deviation[size_t(t * (cols / 32) + b)];
        emu += deviation;
        quant += std::fabs(deviation);
      }
      const size_t o = size_t(t * rows + r);
      e.emulated[o] = emu;
      e.quant_bound[o] = quant;
      e.rounding_bound[o] = double(n_sums) * kU * magnitude * 2 + 1e-30;
    }
  }
  return e;
}

void check_against_oracles(const std::vector<float>& y, const Expected& e,
                           const std::string& what) {
  for (size_t o = 0; o < y.size(); ++o) {
    ASSERT_TRUE(std::isfinite(y[o])) << what << " output " << o;
    ASSERT_LE(std::fabs(y[o] - e.emulated[o]), e.rounding_bound[o])
        << what << " output " << o << ": got " << y[o] << ", emulated " << e.emulated[o];
    ASSERT_LE(std::fabs(double(y[o]) - e.reference[o]), e.quant_bound[o] + e.rounding_bound[o])
        << what << " output " << o << ": got " << y[o] << ", reference " << e.reference[o];
  }
}

struct Shape {
  int64_t rows, cols;
};

std::vector<Shape> shapes_for(GgmlType t) {
  switch (t) {
    case GgmlType::F32:
      return {{7, 1}, {33, 13}, {67, 300}};
    case GgmlType::F16:
    case GgmlType::BF16:
      return {{5, 31}, {67, 160}};
    case GgmlType::Q8_0:
    case GgmlType::Q4_0:
      return {{7, 32}, {67, 96}, {33, 320}};  // 1, 3 (odd) and 10 blocks
    case GgmlType::Q5_0:
    case GgmlType::IQ4_NL:  // also 24 and 33 blocks: 16-block groups and 8 or 1 more
    case GgmlType::MXFP4:
      return {{7, 32}, {67, 96}, {33, 320}, {9, 768}, {13, 1056}};
    case GgmlType::Q4_1:
    case GgmlType::Q5_1:
      // The AVX-512 kernel's groups of 16 blocks and short last groups: 1,
      // 33 = 2 x 16 + 1, 3, 10, 23 = 16 + 7 and 17 = 16 + 1 blocks.
      return {{7, 32}, {67, 1056}, {5, 96}, {9, 320}, {11, 736}, {33, 544}};
    default:
      return {{7, 256}, {37, 768}};
  }
}

const GgmlType kTypes[] = {GgmlType::F32,    GgmlType::F16,  GgmlType::BF16,   GgmlType::Q8_0,
                           GgmlType::Q4_0,   GgmlType::Q4_1, GgmlType::Q5_0,   GgmlType::Q5_1,
                           GgmlType::IQ4_NL, GgmlType::Q2_K, GgmlType::Q3_K,   GgmlType::Q4_K,
                           GgmlType::Q5_K,   GgmlType::Q6_K, GgmlType::IQ4_XS, GgmlType::MXFP4};

class MatmulAllTypes : public ::testing::TestWithParam<GgmlType> {};

TEST_P(MatmulAllTypes, MatchesOraclesAtEveryLevelThreadCountAndBatchSize) {
  const GgmlType type = GetParam();
  LevelGuard guard;
  ThreadPool pools[3] = {ThreadPool(1), ThreadPool(2), ThreadPool(3)};
  MatmulScratch scratch;
  uint32_t seed = 100;
  for (const Shape& shape : shapes_for(type)) {
    const Weights w = make_weights(type, shape.rows, shape.cols, ++seed);
    // 9 and 33: full 8-token tiles plus a remainder of one.
    for (int64_t n_tokens : {1, 2, 3, 5, 9, 17, 33}) {
      const std::vector<float> x = make_activations(n_tokens, shape.cols, ++seed);
      const Expected e = expected_results(w, x, n_tokens);
      for (SimdLevel level : available_simd_levels()) {
        set_simd_level(level);
        for (ThreadPool& pool : pools) {
          std::vector<float> y(size_t(shape.rows * n_tokens), NAN);
          matmul(w.view, x.data(), n_tokens, y.data(), pool, scratch);
          const std::string what =
              std::string(type_name(type)) + " " + simd_level_name(level) + " rows " +
              std::to_string(shape.rows) + " cols " + std::to_string(shape.cols) + " tokens " +
              std::to_string(n_tokens) + " threads " + std::to_string(pool.size());
          check_against_oracles(y, e, what);
        }
      }
    }
  }
}

// Invariant 1 of DESIGN.md at the kernel level: a token's result does not
// depend on which other tokens share the call or on how rows are split.
TEST_P(MatmulAllTypes, BitwiseIndependentOfBatchAndThreads) {
  const GgmlType type = GetParam();
  LevelGuard guard;
  ThreadPool one(1), three(3);
  MatmulScratch scratch;
  const Shape shape = shapes_for(type).back();
  const Weights w = make_weights(type, shape.rows, shape.cols, 7);
  // 41: past kPanelMinTokens, so Q4_K and IQ4_XS batches run on decoded
  // panels (kquant_panels_avx512.h), with a 1-token remainder tile.
  const int64_t n_tokens = 41;
  const std::vector<float> x = make_activations(n_tokens, shape.cols, 8);
  for (SimdLevel level : available_simd_levels()) {
    set_simd_level(level);
    std::vector<float> batch(size_t(shape.rows * n_tokens));
    matmul(w.view, x.data(), n_tokens, batch.data(), one, scratch);
    for (int64_t t = 0; t < n_tokens; ++t) {
      std::vector<float> alone(size_t(shape.rows));
      matmul(w.view, x.data() + t * shape.cols, 1, alone.data(), three, scratch);
      ASSERT_EQ(0, std::memcmp(alone.data(), batch.data() + t * shape.rows, alone.size() * 4))
          << type_name(type) << " " << simd_level_name(level) << " token " << t;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, MatmulAllTypes, ::testing::ValuesIn(kTypes),
                         [](const auto& param_info) {
                           return std::string(type_name(param_info.param));
                         });

// The register-tiled kernels compute rows in groups of up to 4 and tokens
// in groups of up to 4 or 8; every remainder shape (rows 1..9, a row count
// past one L1 row block, tokens 1..17) at every level and at 1 and 3 threads
// (which move the row-group boundaries) must still match both oracles.
TEST_P(MatmulAllTypes, EveryTileRemainderShapeMatchesOracles) {
  const GgmlType type = GetParam();
  LevelGuard guard;
  ThreadPool pools[2] = {ThreadPool(1), ThreadPool(3)};
  MatmulScratch scratch;
  const int64_t cols = shapes_for(type)[1].cols;  // several blocks, odd where the format allows
  // 16 KiB of rows per L1 block: one row more than two blocks leaves a 1-row group.
  const int64_t block_rows = (16 * 1024 / int64_t(row_bytes(type, size_t(cols)))) / 4 * 4;
  std::vector<int64_t> row_counts = {1, 2, 3, 4, 5, 6, 7, 8, 9, 2 * block_rows + 1};
  uint32_t seed = 300;
  for (int64_t rows : row_counts) {
    const Weights w = make_weights(type, rows, cols, ++seed);
    for (int64_t n_tokens = 1; n_tokens <= 17; ++n_tokens) {
      if (rows > 9 && n_tokens % 4 != 1) continue;  // the large shape: a few token counts
      const std::vector<float> x = make_activations(n_tokens, cols, ++seed);
      const Expected e = expected_results(w, x, n_tokens);
      for (SimdLevel level : available_simd_levels()) {
        set_simd_level(level);
        for (ThreadPool& pool : pools) {
          std::vector<float> y(size_t(rows * n_tokens), NAN);
          matmul(w.view, x.data(), n_tokens, y.data(), pool, scratch);
          check_against_oracles(y, e,
                                std::string(type_name(type)) + " " + simd_level_name(level) +
                                    " rows " + std::to_string(rows) + " tokens " +
                                    std::to_string(n_tokens) + " threads " +
                                    std::to_string(pool.size()));
        }
      }
    }
  }
}

// The determinism contract across tile shapes: every window of k consecutive
// tokens (k = 1..17), computed alone on 3 threads, gives bitwise the rows the
// full 17-token call gave on 1 thread, so neither the token tile a token lands
// in nor the row group a row lands in changes its result.
TEST_P(MatmulAllTypes, EveryTokenWindowBitwiseEqualsTheFullBatch) {
  const GgmlType type = GetParam();
  LevelGuard guard;
  ThreadPool one(1), three(3);
  MatmulScratch scratch;
  const int64_t rows = 13, cols = shapes_for(type)[1].cols, n_tokens = 17;
  const Weights w = make_weights(type, rows, cols, 11);
  const std::vector<float> x = make_activations(n_tokens, cols, 12);
  for (SimdLevel level : available_simd_levels()) {
    set_simd_level(level);
    std::vector<float> full(size_t(rows * n_tokens));
    matmul(w.view, x.data(), n_tokens, full.data(), one, scratch);
    for (int64_t k = 1; k <= n_tokens; ++k) {
      for (int64_t t0 = 0; t0 + k <= n_tokens; t0 += std::max<int64_t>(1, k / 2)) {
        std::vector<float> window(size_t(rows * k));
        matmul(w.view, x.data() + t0 * cols, k, window.data(), three, scratch);
        ASSERT_EQ(0, std::memcmp(window.data(), full.data() + t0 * rows, window.size() * 4))
            << type_name(type) << " " << simd_level_name(level) << " tokens [" << t0 << ", "
            << t0 + k << ")";
      }
    }
  }
}

// Long prefills go through the rows once per L2-sized block of activations
// (256 KiB: 32 tokens of 8192 Q8 values, 15 of 4112 f32). 37 tokens cross a
// block boundary mid-tile; each token must still match the oracles and,
// bitwise, its own single-token result.
TEST(Matmul, LongPrefillAcrossActivationBlocksMatchesOraclesAndSingleTokens) {
  LevelGuard guard;
  ThreadPool pool(3);
  MatmulScratch scratch;
  const int64_t n_tokens = 37, rows = 6;
  for (GgmlType type :
       {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0,
        GgmlType::Q5_0, GgmlType::IQ4_NL, GgmlType::Q4_1, GgmlType::Q5_1, GgmlType::MXFP4}) {
    const int64_t cols = activation_block(type) ? 8192 : 4112;
    const Weights w = make_weights(type, rows, cols, 21);
    const std::vector<float> x = make_activations(n_tokens, cols, 22);
    const Expected e = expected_results(w, x, n_tokens);
    for (SimdLevel level : available_simd_levels()) {
      set_simd_level(level);
      const std::string what = std::string(type_name(type)) + " " + simd_level_name(level);
      std::vector<float> y(size_t(rows * n_tokens), NAN);
      matmul(w.view, x.data(), n_tokens, y.data(), pool, scratch);
      check_against_oracles(y, e, what);
      for (int64_t t = 0; t < n_tokens; ++t) {
        std::vector<float> alone(static_cast<size_t>(rows));
        matmul(w.view, x.data() + t * cols, 1, alone.data(), pool, scratch);
        ASSERT_EQ(0, std::memcmp(alone.data(), y.data() + t * rows, alone.size() * 4))
            << what << " token " << t;
      }
    }
  }
}

// K-quant and IQ4_XS dot products are exact integers folded in one fixed f32
// sequence (kernels/kquant_accumulate.h), so every SIMD level gives the same bits.
// 1792 columns are 7 super-blocks: kernels that finish four at a time
// (kquant_decode_row.h) run one whole group and a group of three.
TEST(Matmul, KQuantResultsIdenticalAcrossSimdLevels) {
  LevelGuard guard;
  ThreadPool pool(2);
  MatmulScratch scratch;
  for (GgmlType type : {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K,
                        GgmlType::Q6_K, GgmlType::IQ4_XS}) {
    for (int64_t cols : {1024, 1792}) {
      const Weights w = make_weights(type, 29, cols, 3);
      for (int64_t n_tokens : {1, 6}) {
        const std::vector<float> x = make_activations(n_tokens, cols, 4);
        std::vector<float> scalar(size_t(29 * n_tokens));
        set_simd_level(SimdLevel::Scalar);
        matmul(w.view, x.data(), n_tokens, scalar.data(), pool, scratch);
        for (SimdLevel level : available_simd_levels()) {
          set_simd_level(level);
          std::vector<float> y(scalar.size());
          matmul(w.view, x.data(), n_tokens, y.data(), pool, scratch);
          ASSERT_EQ(0, std::memcmp(y.data(), scalar.data(), y.size() * 4))
              << type_name(type) << " " << simd_level_name(level) << " cols " << cols << " tokens "
              << n_tokens;
        }
      }
    }
  }
}

// Rows of random bytes reach every field value the quantizers avoid (Q5_K
// levels 31 with scales 63, IQ4_XS levels -127 under factor -32), and
// activations of +-1 with a few larger values quantize to +-127: the
// largest pair sums and products the SIMD kernels' 16-bit steps must hold.
// Every level must give the scalar kernel's bits, and the emulation oracle
// must agree within rounding.
TEST(Matmul, Q5_KAndIQ4_XSExtremeBlocksIdenticalAcrossSimdLevels) {
  LevelGuard guard;
  ThreadPool pool(2);
  MatmulScratch scratch;
  std::mt19937 rng(9);
  for (GgmlType type : {GgmlType::Q5_K, GgmlType::IQ4_XS}) {
    const int64_t rows = 21, cols = 1024, n_tokens = 3;
    const size_t rb = row_bytes(type, size_t(cols));
    Weights w;
    w.bytes.resize(rb * size_t(rows));
    for (uint8_t& byte : w.bytes) byte = uint8_t(rng());
    for (int64_t r = 0; r < rows; ++r) {
      for (size_t off = 0; off < rb; off += type_traits(type).block_bytes) {
        uint8_t* block = w.bytes.data() + size_t(r) * rb + off;
        const uint16_t d = r % 2 ? 0xbc00 : 0x3c00;  // -1 or 1: products stay exact in f32
        std::memcpy(block, &d, 2);
        if (type == GgmlType::Q5_K) std::memcpy(block + 2, &d, 2);  // dmin
      }
    }
    w.dequantized.resize(size_t(rows * cols));
    for (int64_t r = 0; r < rows; ++r) {
      dequantize_row(type, w.bytes.data() + size_t(r) * rb, w.dequantized.data() + r * cols, cols);
    }
    w.view = WeightView{type, w.bytes.data(), rows, cols};
    std::vector<float> x(size_t(n_tokens * cols));
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = (rng() % 2 ? 1.0f : -1.0f) * (i % 97 ? 1.0f : 1.5f);
    const Expected e = expected_results(w, x, n_tokens);
    std::vector<float> scalar(size_t(rows * n_tokens));
    set_simd_level(SimdLevel::Scalar);
    matmul(w.view, x.data(), n_tokens, scalar.data(), pool, scratch);
    check_against_oracles(scalar, e, std::string(type_name(type)) + " scalar");
    for (SimdLevel level : available_simd_levels()) {
      set_simd_level(level);
      for (int64_t t = 0; t < n_tokens; ++t) {  // one token (decode path) and the batch
        std::vector<float> alone(static_cast<size_t>(rows));
        matmul(w.view, x.data() + t * cols, 1, alone.data(), pool, scratch);
        ASSERT_EQ(0, std::memcmp(alone.data(), scalar.data() + t * rows, alone.size() * 4))
            << type_name(type) << " " << simd_level_name(level) << " token " << t;
      }
      std::vector<float> y(scalar.size());
      matmul(w.view, x.data(), n_tokens, y.data(), pool, scratch);
      ASSERT_EQ(0, std::memcmp(y.data(), scalar.data(), y.size() * 4))
          << type_name(type) << " " << simd_level_name(level);
    }
  }
}

// MXFP4 rows of random bytes: every code, and E8M0 bytes over all 256
// values against tiny activations (2^-16: no sum overflows, and e = 0, 1
// scale them into f32's subnormals), then bytes 0..8 (the subnormal and
// smallest normal scales e8m0_half builds) against large ones (2^12: the
// products stay normal). 1056 columns end in a short group of 1 block.
// Every level must give the scalar kernel's bits, alone and in a batch.
TEST(Matmul, MXFP4ExtremeScalesIdenticalAcrossSimdLevels) {
  LevelGuard guard;
  ThreadPool pool(2);
  MatmulScratch scratch;
  std::mt19937 rng(11);
  const int64_t rows = 23, cols = 1056, n_tokens = 3;
  const size_t rb = row_bytes(GgmlType::MXFP4, size_t(cols));
  struct Case {
    int e_values;
    float magnitude;
  };
  for (const Case c : {Case{256, 0x1p-16f}, Case{9, 0x1p12f}}) {
    std::vector<uint8_t> bytes(rb * size_t(rows));
    for (uint8_t& byte : bytes) byte = uint8_t(rng());
    for (size_t off = 0; off < bytes.size(); off += sizeof(BlockMXFP4))
      bytes[off] = uint8_t(rng() % unsigned(c.e_values));
    const WeightView w{GgmlType::MXFP4, bytes.data(), rows, cols};
    std::vector<float> x(size_t(n_tokens * cols));
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = (rng() % 2 ? c.magnitude : -c.magnitude) * (i % 97 ? 1.0f : 1.5f);
    std::vector<float> scalar(size_t(rows * n_tokens));
    set_simd_level(SimdLevel::Scalar);
    matmul(w, x.data(), n_tokens, scalar.data(), pool, scratch);
    for (SimdLevel level : available_simd_levels()) {
      set_simd_level(level);
      for (int64_t t = 0; t < n_tokens; ++t) {
        std::vector<float> alone(static_cast<size_t>(rows));
        matmul(w, x.data() + t * cols, 1, alone.data(), pool, scratch);
        ASSERT_EQ(0, std::memcmp(alone.data(), scalar.data() + t * rows, alone.size() * 4))
            << simd_level_name(level) << " e values " << c.e_values << " token " << t;
      }
      std::vector<float> y(scalar.size());
      matmul(w, x.data(), n_tokens, y.data(), pool, scratch);
      ASSERT_EQ(0, std::memcmp(y.data(), scalar.data(), y.size() * 4))
          << simd_level_name(level) << " e values " << c.e_values;
    }
  }
}

// Q5_0, IQ4_NL and MXFP4: exact per-block integer sums folded in the 16-lane
// pattern of kernels/block32_fold.h, recomputed here from its description:
// the weights' integer levels (dequantized value / block scale, exact: at
// most 7 bits times an f16, or for MXFP4 a doubled E2M1 value times a power
// of two), the activations quantized as the Q8-blocks form
// documents, then p_b = (dw * da) * isum into lane b % 16 and the fixed tree.
// Every level must give these bits, for decode (1-2 tokens, 4 row streams)
// and batch tiles, over whole and partial 16-block groups.
float documented_block32_fold(const Weights& w, int64_t r, const std::vector<int8_t>& aq,
                              const std::vector<float>& da, int64_t t) {
  const int64_t cols = w.view.cols, n_blocks = cols / 32;
  const size_t rb = row_bytes(w.view.type, size_t(cols));
  const size_t block_bytes = rb / size_t(n_blocks);
  float s[16] = {};
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* blk = w.bytes.data() + size_t(r) * rb + size_t(b) * block_bytes;
    uint16_t h;
    std::memcpy(&h, blk, 2);
    const float dw = w.view.type == GgmlType::MXFP4 ? e8m0_half(blk[0]) : fp16_to_fp32(h);
    int32_t isum = 0;
    for (int i = 0; i < 32; ++i) {
      const int64_t c = 32 * b + i;
      const int level = dw == 0.0f ? 0 : int(w.dequantized[size_t(r * cols + c)] / dw);
      isum += level * aq[size_t(t * cols + c)];
    }
    const float scale = dw * da[size_t(t * n_blocks + b)];
    const float term = scale * float(isum);
    s[b % 16] = s[b % 16] + term;
  }
  float u[8];
  for (int j = 0; j < 8; ++j) u[j] = s[j] + s[j + 8];
  for (int j = 0; j < 4; ++j) u[j] = u[j] + u[j + 4];
  for (int j = 0; j < 2; ++j) u[j] = u[j] + u[j + 2];
  return u[0] + u[1];
}

TEST(Matmul, Q8BlocksResultsAreTheDocumentedFoldAtEverySimdLevel) {
  LevelGuard guard;
  ThreadPool pool(2);
  MatmulScratch scratch;
  for (GgmlType type : {GgmlType::Q5_0, GgmlType::IQ4_NL, GgmlType::MXFP4}) {
    for (const Shape& shape :
         {Shape{29, 96}, Shape{29, 320}, Shape{29, 768}, Shape{29, 1056}, Shape{6, 2048}}) {
      const Weights w = make_weights(type, shape.rows, shape.cols, 3);
      for (int64_t n_tokens : {1, 2, 6}) {
        const std::vector<float> x = make_activations(n_tokens, shape.cols, 4);
        const int64_t n_blocks = shape.cols / 32;
        std::vector<int8_t> aq(size_t(n_tokens * shape.cols));
        std::vector<float> da(size_t(n_tokens * n_blocks)), sums(da.size());
        quantize_activations_q8_blocks_scalar(x.data(), shape.cols, 0, n_tokens, aq.data(),
                                              da.data(), sums.data());
        std::vector<float> expected(size_t(shape.rows * n_tokens));
        for (int64_t t = 0; t < n_tokens; ++t)
          for (int64_t r = 0; r < shape.rows; ++r)
            expected[size_t(t * shape.rows + r)] = documented_block32_fold(w, r, aq, da, t);
        for (SimdLevel level : available_simd_levels()) {
          set_simd_level(level);
          std::vector<float> y(expected.size());
          matmul(w.view, x.data(), n_tokens, y.data(), pool, scratch);
          for (size_t o = 0; o < y.size(); ++o)
            ASSERT_EQ(testing::float_bits(y[o]), testing::float_bits(expected[o]))
                << type_name(type) << " " << simd_level_name(level) << " cols " << shape.cols
                << " tokens " << n_tokens << " output " << o << ": got " << y[o] << ", expected "
                << expected[o];
        }
      }
    }
  }
}

// Q4_1 and Q5_1 likewise: exact block sums folded in one fixed order
// (kernels/affine_fold.h). Decode (one and two tokens: the 4-stream tiles)
// and batches (row x token tiles, partial ones); rows of whole groups of 16
// blocks (512 cols), ending in a short group of 8 (768) and of 1 (1056).
TEST(Matmul, AffineResultsIdenticalAcrossSimdLevels) {
  LevelGuard guard;
  ThreadPool pool(2);
  MatmulScratch scratch;
  for (GgmlType type : {GgmlType::Q4_1, GgmlType::Q5_1}) {
    for (int64_t cols : {1056, 768, 512}) {
      const Weights w = make_weights(type, 29, cols, 3);
      for (int64_t n_tokens : {1, 2, 7}) {
        const std::vector<float> x = make_activations(n_tokens, cols, 4);
        std::vector<float> scalar(size_t(29 * n_tokens));
        set_simd_level(SimdLevel::Scalar);
        matmul(w.view, x.data(), n_tokens, scalar.data(), pool, scratch);
        for (SimdLevel level : available_simd_levels()) {
          set_simd_level(level);
          std::vector<float> y(scalar.size());
          matmul(w.view, x.data(), n_tokens, y.data(), pool, scratch);
          ASSERT_EQ(0, std::memcmp(y.data(), scalar.data(), y.size() * 4))
              << type_name(type) << " " << simd_level_name(level) << " cols " << cols << " tokens "
              << n_tokens;
        }
      }
    }
  }
}

TEST(Matmul, F32WithinOneInHundredThousandOfTheMagnitude) {
  LevelGuard guard;
  ThreadPool pool(2);
  MatmulScratch scratch;
  const Weights w = make_weights(GgmlType::F32, 41, 517, 5);
  const std::vector<float> x = make_activations(3, 517, 6);
  std::vector<float> ref(41 * 3);
  matmul_reference(w.view, x.data(), 3, ref.data());
  for (SimdLevel level : available_simd_levels()) {
    set_simd_level(level);
    std::vector<float> y(ref.size());
    matmul(w.view, x.data(), 3, y.data(), pool, scratch);
    for (int64_t t = 0; t < 3; ++t) {
      for (int64_t r = 0; r < 41; ++r) {
        double magnitude = 0;
        for (int64_t c = 0; c < 517; ++c) {
          magnitude +=
              std::fabs(double(w.dequantized[size_t(r * 517 + c)]) * x[size_t(t * 517 + c)]);
        }
        const size_t o = size_t(t * 41 + r);
        ASSERT_LE(std::fabs(double(y[o]) - ref[o]), 1e-5 * magnitude) << simd_level_name(level);
      }
    }
  }
}

TEST(Matmul, ScratchIsSizedByTypeAndOnlyGrows) {
  const WeightView f32{GgmlType::F32, nullptr, 10, 64};
  const WeightView q8{GgmlType::Q8_0, nullptr, 10, 64};
  const WeightView q4k{GgmlType::Q4_K, nullptr, 10, 512};
  EXPECT_EQ(matmul_scratch_bytes(f32, 8), 0u);
  EXPECT_GE(matmul_scratch_bytes(q8, 8), size_t(8 * 64 + 8 * 2 * 4));
  EXPECT_EQ(matmul_scratch_bytes(q4k, 3), size_t(3 * 2 * 292));

  const Weights w = make_weights(GgmlType::Q8_0, 4, 64, 1);
  const std::vector<float> x = make_activations(8, 64, 2);
  std::vector<float> y(4 * 8);
  ThreadPool pool(1);
  MatmulScratch scratch;
  matmul(w.view, x.data(), 8, y.data(), pool, scratch);
  const size_t grown = scratch.activations.size();
  EXPECT_GE(grown, matmul_scratch_bytes(w.view, 8));
  const uint8_t* buffer = scratch.activations.data();
  matmul(w.view, x.data(), 1, y.data(), pool, scratch);
  EXPECT_EQ(scratch.activations.size(), grown);
  EXPECT_EQ(scratch.activations.data(), buffer);  // no reallocation for a smaller call
}

TEST(Matmul, RejectsUnsupportedTypesAndRaggedRows) {
  ThreadPool pool(1);
  MatmulScratch scratch;
  std::vector<uint8_t> bytes(4096);
  std::vector<float> x(1024), y(64);
  try {
    matmul(WeightView{GgmlType::Q4_K, bytes.data(), 2, 300}, x.data(), 1, y.data(), pool, scratch);
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("300"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("q4_k"), std::string::npos) << e.what();
  }
  EXPECT_THROW(matmul(WeightView{GgmlType::IQ2_XXS, bytes.data(), 2, 256}, x.data(), 1, y.data(),
                      pool, scratch),
               std::invalid_argument);
  EXPECT_THROW(matmul_scratch_bytes(WeightView{GgmlType::Q8_0, nullptr, 2, 48}, 1),
               std::invalid_argument);
}

// matmul_batch: weights of mixed types (all four native activation forms) sharing
// one input give, each, bitwise what matmul() gives for it alone, at every
// level and thread count; row counts are odd so thread ranges straddle weights.
TEST(MatmulBatch, EachOutputBitwiseEqualsItsOwnMatmul) {
  LevelGuard guard;
  ThreadPool pools[3] = {ThreadPool(1), ThreadPool(2), ThreadPool(3)};
  MatmulScratch batch_scratch, alone_scratch;
  const int64_t cols = 512;
  const GgmlType types[] = {GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::F16, GgmlType::Q4_1,
                            GgmlType::Q4_0, GgmlType::Q6_K, GgmlType::Q5_1};
  const int64_t rows[] = {13, 7, 5, 11, 33, 1, 3};
  std::vector<Weights> weights;
  for (size_t i = 0; i < std::size(types); ++i)
    weights.push_back(make_weights(types[i], rows[i], cols, uint32_t(40 + i)));
  for (int64_t n_tokens : {1, 3, 9}) {
    const std::vector<float> x = make_activations(n_tokens, cols, 50);
    for (SimdLevel level : available_simd_levels()) {
      set_simd_level(level);
      for (ThreadPool& pool : pools) {
        std::vector<std::vector<float>> ys(std::size(types));
        std::vector<MatmulOutput> outs;
        for (size_t i = 0; i < std::size(types); ++i) {
          ys[i].assign(size_t(rows[i] * n_tokens), NAN);
          outs.push_back({weights[i].view, ys[i].data()});
        }
        matmul_batch(outs, x.data(), n_tokens, pool, batch_scratch);
        for (size_t i = 0; i < std::size(types); ++i) {
          std::vector<float> alone(ys[i].size());
          matmul(weights[i].view, x.data(), n_tokens, alone.data(), pools[0], alone_scratch);
          ASSERT_EQ(0, std::memcmp(alone.data(), ys[i].data(), alone.size() * 4))
              << type_name(types[i]) << " " << simd_level_name(level) << " tokens " << n_tokens
              << " threads " << pool.size();
        }
      }
    }
  }
}

TEST(MatmulBatch, RejectsMismatchedColsAndTooManyWeights) {
  ThreadPool pool(1);
  MatmulScratch scratch;
  std::vector<uint8_t> bytes(1 << 16);
  std::vector<float> x(1024), y(1024);
  const MatmulOutput mismatched[] = {{WeightView{GgmlType::F32, bytes.data(), 2, 64}, y.data()},
                                     {WeightView{GgmlType::F32, bytes.data(), 2, 32}, y.data()}};
  try {
    matmul_batch(mismatched, x.data(), 1, pool, scratch);
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("32 cols"), std::string::npos) << e.what();
  }
  std::vector<MatmulOutput> many(kMatmulBatchMaxWeights + 1,
                                 {WeightView{GgmlType::F32, bytes.data(), 1, 64}, y.data()});
  EXPECT_THROW(matmul_batch(many, x.data(), 1, pool, scratch), std::invalid_argument);
  matmul_batch({}, x.data(), 1, pool, scratch);  // nothing to do is not an error
}

TEST(Matmul, EmptyShapes) {
  ThreadPool pool(2);
  MatmulScratch scratch;
  std::vector<float> y(6, NAN);
  matmul(WeightView{GgmlType::F32, nullptr, 3, 0}, nullptr, 2, y.data(), pool, scratch);
  for (float v : y) EXPECT_EQ(v, 0.0f);  // an empty dot product is zero
  y.assign(6, NAN);
  matmul(WeightView{GgmlType::Q8_0, nullptr, 0, 64}, nullptr, 2, y.data(), pool, scratch);
  matmul(WeightView{GgmlType::Q8_0, nullptr, 3, 64}, nullptr, 0, y.data(), pool, scratch);
  for (float v : y) EXPECT_TRUE(std::isnan(v));  // nothing to write
}

// Q8_0 and Q4_0 rows in the Tiles16 layouts (AMX machines): the VNNI kernel
// for decode and small batches, AMX for batches of kAmxMinTokens or more.
// Their f32 chain differs from the native kernels', so they are checked
// against the oracles, and against each other bitwise.
// A matrix in its native bytes and regrouped into `view.layout`.
struct RegroupedWeights {
  Weights native;
  std::vector<uint8_t> regrouped;
  WeightView view;
};

RegroupedWeights make_regrouped_weights(GgmlType type, WeightLayout layout, int64_t rows,
                                        int64_t cols, uint32_t seed) {
  RegroupedWeights r{make_weights(type, rows, cols, seed), {}, {}};
  r.regrouped.resize(r.native.bytes.size());
  regroup_rows(layout, r.native.bytes.data(), rows, cols, r.regrouped.data());
  r.view = WeightView{type, r.regrouped.data(), rows, cols, layout};
  return r;
}

// Each token of `batch` (the n_tokens x rows result of one call) is bitwise
// what the token gives alone, computed on `pool` (decode).
void expect_each_token_alone_is_bitwise(const WeightView& w, const std::vector<float>& x,
                                        int64_t n_tokens, const std::vector<float>& batch,
                                        ThreadPool& pool, MatmulScratch& scratch) {
  for (int64_t t = 0; t < n_tokens; ++t) {
    std::vector<float> alone(static_cast<size_t>(w.rows));
    matmul(w, x.data() + t * w.cols, 1, alone.data(), pool, scratch);
    ASSERT_EQ(0, std::memcmp(alone.data(), batch.data() + t * w.rows, alone.size() * 4))
        << layout_name(w.layout) << " token " << t;
  }
}

// Every byte of w's native blocks random (rng) but the f16 scales that
// fix(block, block_bytes, offset) writes back (finite products), then the
// rows regrouped into w's layout again.
template <class FixScales>
void randomize_but_scales(RegroupedWeights& w, std::mt19937& rng, FixScales fix) {
  const size_t block = type_traits(w.view.type).block_bytes;
  for (size_t off = 0; off < w.native.bytes.size(); off += block) {
    uint8_t* blk = &w.native.bytes[off];
    for (size_t i = 0; i < block; ++i) blk[i] = uint8_t(rng());
    fix(blk, block, off);
  }
  regroup_rows(w.view.layout, w.native.bytes.data(), w.view.rows, w.view.cols, w.regrouped.data());
}

// For each token count: w's layout at the AVX-512 level on every pool gives
// the bits the scalar kernel gives on w's native rows (on pools[0]).
// Activations from make_activations(n_tokens, cols, n_tokens + seed_offset),
// with random_bytes replaced by +-1 (rng): the largest sums.
void expect_tiles_bitwise_scalar(const RegroupedWeights& w, std::initializer_list<int64_t> tokens,
                                 std::initializer_list<ThreadPool*> pools, bool random_bytes,
                                 std::mt19937& rng, MatmulScratch& scratch,
                                 uint32_t seed_offset = 0) {
  const int64_t rows = w.view.rows, cols = w.view.cols;
  for (int64_t n_tokens : tokens) {
    std::vector<float> x = make_activations(n_tokens, cols, uint32_t(n_tokens) + seed_offset);
    if (random_bytes)
      for (size_t i = 0; i < x.size(); ++i) x[i] = (rng() % 2 ? 1.0f : -1.0f);
    std::vector<float> expected(size_t(rows * n_tokens));
    set_simd_level(SimdLevel::Scalar);
    matmul(w.native.view, x.data(), n_tokens, expected.data(), **pools.begin(), scratch);
    set_simd_level(SimdLevel::Avx512);
    for (ThreadPool* pool : pools) {
      std::vector<float> y(expected.size(), NAN);
      matmul(w.view, x.data(), n_tokens, y.data(), *pool, scratch);
      ASSERT_EQ(0, std::memcmp(y.data(), expected.data(), y.size() * 4))
          << layout_name(w.view.layout) << " rows " << rows << " cols " << cols << " tokens "
          << n_tokens << " threads " << pool->size() << (random_bytes ? " random bytes" : "");
    }
  }
}

constexpr GgmlType kTiledTypes[] = {GgmlType::Q8_0, GgmlType::Q4_0};

WeightLayout tiles16_layout(GgmlType type) {
  return type == GgmlType::Q8_0 ? WeightLayout::Q8_0Tiles16 : WeightLayout::Q4_0Tiles16;
}

RegroupedWeights make_tiled_weights(GgmlType type, int64_t rows, int64_t cols, uint32_t seed) {
  return make_regrouped_weights(type, tiles16_layout(type), rows, cols, seed);
}

// Restores AMX use when a test ends (set_amx_enabled is process-wide).
struct AmxGuard {
  ~AmxGuard() { set_amx_enabled(true); }
};

// Shapes: 1, 3 (the AMX kernel's group triple) and 5 groups (a triple and a
// pair) x 1, 3, 24 and 65 blocks; token counts around the VNNI decode (1-2),
// VNNI batch (3) and AMX (4+) paths and whole and partial 16-token tiles.
TEST(MatmulTiles16, MatchesOraclesOnEveryPathTokenCountAndThreads) {
  LevelGuard guard;
  AmxGuard amx_guard;
  set_simd_level(SimdLevel::Avx512);
  if (simd_level() != SimdLevel::Avx512) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  ThreadPool pools[2] = {ThreadPool(1), ThreadPool(3)};
  MatmulScratch scratch;
  uint32_t seed = 900;
  const Shape shapes[] = {{16, 32}, {48, 96}, {80, 768}, {48, 2080}};
  for (GgmlType type : kTiledTypes)
    for (const Shape& shape : shapes) {
      const RegroupedWeights w = make_tiled_weights(type, shape.rows, shape.cols, ++seed);
      for (int64_t n_tokens : {1, 2, 3, 4, 5, 15, 16, 17, 20, 35}) {
        const std::vector<float> x = make_activations(n_tokens, shape.cols, ++seed);
        const Expected e = expected_results(w.native, x, n_tokens);
        for (bool amx : {false, true}) {
          set_amx_enabled(amx);
          for (ThreadPool& pool : pools) {
            std::vector<float> y(size_t(shape.rows * n_tokens), NAN);
            matmul(w.view, x.data(), n_tokens, y.data(), pool, scratch);
            check_against_oracles(
                y, e,
                std::string(layout_name(w.view.layout)) + " rows " + std::to_string(shape.rows) +
                    " cols " + std::to_string(shape.cols) + " tokens " + std::to_string(n_tokens) +
                    " threads " + std::to_string(pool.size()) + (amx ? " amx on" : " amx off"));
          }
        }
      }
    }
}

// Invariant 1 of DESIGN.md across the two kernels: a token's rows are the
// same bits computed alone (VNNI decode, 3 threads splitting the groups), in
// a batch on the VNNI kernel (37 tokens: whole and partial token tiles, an
// odd group) and, where the machine has it, in a batch on AMX.
TEST(MatmulTiles16, EveryTokenIsBitwiseTheSameAloneOnVnniAndOnAmx) {
  LevelGuard guard;
  AmxGuard amx_guard;
  set_simd_level(SimdLevel::Avx512);
  if (simd_level() != SimdLevel::Avx512) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  ThreadPool one(1), three(3);
  MatmulScratch scratch;
  const int64_t rows = 80, cols = 768, n_tokens = 37;
  for (GgmlType type : kTiledTypes) {
    const RegroupedWeights w = make_tiled_weights(type, rows, cols, 77);
    const std::vector<float> x = make_activations(n_tokens, cols, 78);
    std::vector<float> on_vnni(size_t(rows * n_tokens));
    set_amx_enabled(false);
    matmul(w.view, x.data(), n_tokens, on_vnni.data(), three, scratch);
    ASSERT_NO_FATAL_FAILURE(
        expect_each_token_alone_is_bitwise(w.view, x, n_tokens, on_vnni, three, scratch));
    set_amx_enabled(true);
    if (!amx_int8_usable()) continue;
    std::vector<float> on_amx(size_t(rows * n_tokens));
    matmul(w.view, x.data(), n_tokens, on_amx.data(), one, scratch);
    ASSERT_EQ(0, std::memcmp(on_amx.data(), on_vnni.data(), on_amx.size() * sizeof(float)))
        << type_name(type);
  }
  if (!amx_int8_usable())
    std::printf("[  NOTE    ] no AMX-INT8 here (CPU flag %d): the VNNI half of this test ran\n",
                int(cpu_features().amx_int8));
}

// How matmul_batch splits rows over threads: AMX batches in units the
// threads claim one at a time, VNNI batches and decode on any 16-row tile
// layout by parallel_for_stealing (a slow thread takes fewer either way),
// everything else one range per thread.
// (The AMX predicate once never held: the kernel tables hold copies of the
// Tiles16 sets, compared by address.)
TEST(MatmulTiles16, BatchesSplitRowsSoASlowThreadTakesFewer) {
  LevelGuard guard;
  AmxGuard amx_guard;
  set_simd_level(SimdLevel::Avx512);
  if (simd_level() != SimdLevel::Avx512) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  const int64_t rows = 48, cols = 64;
  const Weights native = make_weights(GgmlType::Q8_0, rows, cols, 5);
  const WeightView native_view{GgmlType::Q8_0, native.bytes.data(), rows, cols};
  const bool amx = amx_int8_usable();
  for (GgmlType type : kTiledTypes) {
    const RegroupedWeights w = make_tiled_weights(type, rows, cols, 6);
    const MatmulOutput one[] = {{w.view, nullptr}};
    const MatmulOutput two[] = {{w.view, nullptr}, {w.view, nullptr}};
    const MatmulOutput mixed[] = {{w.view, nullptr}, {native_view, nullptr}};
    const std::string name(type_name(type));
    const MatmulSplit batch = amx ? MatmulSplit::ClaimedUnits : MatmulSplit::Stealing;
    EXPECT_EQ(matmul_batch_split(one, 16, 2), batch) << name;
    EXPECT_EQ(matmul_batch_split(two, kAmxMinTokens, 3), batch) << name;
    EXPECT_EQ(matmul_batch_split(one, kAmxMinTokens - 1, 2), MatmulSplit::Stealing)
        << name << ": VNNI batch";
    EXPECT_EQ(matmul_batch_split(one, kTiles16DecodeMaxTokens, 2), MatmulSplit::Stealing)
        << name << ": decode";
    EXPECT_EQ(matmul_batch_split(mixed, 1, 2), MatmulSplit::RangePerThread)
        << name << ": decode with a native weight";
    EXPECT_EQ(matmul_batch_split(one, 16, 1), MatmulSplit::RangePerThread)
        << name << ": one thread";
    EXPECT_EQ(matmul_batch_split(mixed, 16, 2), MatmulSplit::RangePerThread)
        << name << " with a native weight";
    set_amx_enabled(false);
    EXPECT_EQ(matmul_batch_split(one, 16, 2), MatmulSplit::Stealing) << name << ": AMX off";
    set_amx_enabled(true);
  }
  const MatmulOutput plain[] = {{native_view, nullptr}};
  EXPECT_EQ(matmul_batch_split(plain, 16, 2), MatmulSplit::RangePerThread);
  EXPECT_EQ(matmul_batch_split(plain, 1, 2), MatmulSplit::RangePerThread);
  // The K-quant tiles: decode steals, batches (decoded panels) keep a range
  // per thread.
  const RegroupedWeights q4_k =
      make_regrouped_weights(GgmlType::Q4_K, WeightLayout::Q4_KTiles16, 32, 256, 7);
  const MatmulOutput kquant[] = {{q4_k.view, nullptr}, {q4_k.view, nullptr}};
  EXPECT_EQ(matmul_batch_split(kquant, 1, 2), MatmulSplit::Stealing);
  EXPECT_EQ(matmul_batch_split(kquant, 2, 2), MatmulSplit::Stealing);
  EXPECT_EQ(matmul_batch_split(kquant, 3, 2), MatmulSplit::RangePerThread);
  EXPECT_EQ(matmul_batch_split(kquant, 1, 1), MatmulSplit::RangePerThread);
}

// F16 and BF16 rows in the Interleaved16 layouts (the AVX-512 level's
// layouts for such matrices with rows a multiple of 16): 8-group decode
// tiles and their leftovers, 2-group x 12-token batch tiles and partial
// ones, row blocks of several pairs (80 x 2051: 64 KiB groups), threads
// splitting the groups. Their f32 chain (one fma per column in order)
// differs from the native kernels', so they are checked against the oracles
// and bitwise against themselves.
constexpr GgmlType kInterleavedTypes[] = {GgmlType::F16, GgmlType::BF16};

RegroupedWeights make_interleaved16_weights(GgmlType type, int64_t rows, int64_t cols,
                                            uint32_t seed) {
  const WeightLayout layout =
      type == GgmlType::F16 ? WeightLayout::F16Interleaved16 : WeightLayout::BF16Interleaved16;
  return make_regrouped_weights(type, layout, rows, cols, seed);
}

TEST(MatmulInterleaved16, MatchesOraclesOnEveryPathTokenCountAndThreads) {
  LevelGuard guard;
  set_simd_level(SimdLevel::Avx512);
  if (simd_level() != SimdLevel::Avx512) GTEST_SKIP() << "no AVX-512 on this CPU";
  ThreadPool pools[2] = {ThreadPool(1), ThreadPool(3)};
  MatmulScratch scratch;
  uint32_t seed = 1300;
  const Shape shapes[] = {{16, 1}, {48, 31}, {208, 768}, {80, 2051}};
  for (GgmlType type : kInterleavedTypes)
    for (const Shape& shape : shapes) {
      const RegroupedWeights w = make_interleaved16_weights(type, shape.rows, shape.cols, ++seed);
      for (int64_t n_tokens : {1, 2, 3, 11, 12, 13, 25, 37}) {
        const std::vector<float> x = make_activations(n_tokens, shape.cols, ++seed);
        const Expected e = expected_results(w.native, x, n_tokens);
        for (ThreadPool& pool : pools) {
          std::vector<float> y(size_t(shape.rows * n_tokens), NAN);
          matmul(w.view, x.data(), n_tokens, y.data(), pool, scratch);
          check_against_oracles(
              y, e,
              std::string(layout_name(w.view.layout)) + " rows " + std::to_string(shape.rows) +
                  " cols " + std::to_string(shape.cols) + " tokens " + std::to_string(n_tokens) +
                  " threads " + std::to_string(pool.size()));
        }
      }
    }
}

// Q4_K, Q5_K and Q6_K rows in their Tiles16 layouts: the tile kernel (under kPanelMinTokens tokens,
// token tiles of 4 with their remainders) and the panels decoded from the
// tiles (32 or more) give the scalar kernel's bits on native rows, at any
// thread count (3 threads split groups unevenly), on quantized rows and on
// rows of random bytes (every scale, min and nibble value, +-127 activations).
TEST(MatmulKquantTiles16, BitwiseTheScalarKernelOnEveryPathTokenCountAndThreads) {
  LevelGuard guard;
  set_simd_level(SimdLevel::Avx512);
  if (simd_level() != SimdLevel::Avx512) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  ThreadPool one(1), three(3);
  MatmulScratch scratch;
  std::mt19937 rng(31);
  const Shape shapes[] = {{16, 256}, {48, 768}, {80, 1792}};
  const std::pair<GgmlType, WeightLayout> layouts[] = {{GgmlType::Q4_K, WeightLayout::Q4_KTiles16},
                                                       {GgmlType::Q5_K, WeightLayout::Q5_KTiles16},
                                                       {GgmlType::Q6_K, WeightLayout::Q6_KTiles16}};
  for (const auto& [type, layout] : layouts)
    for (const Shape& shape : shapes)
      for (bool random_bytes : {false, true}) {
        RegroupedWeights w =
            make_regrouped_weights(type, layout, shape.rows, shape.cols, uint32_t(shape.rows));
        if (random_bytes)  // the f16 super-scales +-1, +-0.5
          randomize_but_scales(w, rng, [&, type = type](uint8_t* blk, size_t block, size_t off) {
            const uint16_t d = off % 3 ? 0x3c00 : 0xbc00, dmin = off % 5 ? 0x3800 : 0xb800;
            if (type != GgmlType::Q6_K) {
              std::memcpy(blk, &d, 2);
              std::memcpy(blk + 2, &dmin, 2);
            } else {
              std::memcpy(blk + block - 2, &d, 2);
            }
          });
        ASSERT_NO_FATAL_FAILURE(expect_tiles_bitwise_scalar(
            w, {1, 2, 3, 4, 5, 9, 31, 32, 41}, {&one, &three}, random_bytes, rng, scratch));
      }
}

// IQ4_NL, Q5_0, Q5_1, Q4_1 and MXFP4 rows in their Tiles16 layouts: the decode
// tiles (1-2 tokens: 4 group streams and leftover groups) and the batch
// tiles (group pairs x 6 tokens, partial ones, a lone group) give the scalar
// kernel's bits on native rows (block32_fold.h, affine_fold.h), at 1 and 3
// threads (3 split the groups unevenly), on quantized rows and on rows of
// random bytes (every nibble and fifth bit, +-127 activations); rows of 1,
// 3 and 8 blocks (fewer than the fold's 16 lanes), of 24 (a partial 16-block
// fold round) and of 33.
TEST(MatmulBlock32Tiles16, BitwiseTheScalarKernelOnEveryPathTokenCountAndThreads) {
  LevelGuard guard;
  set_simd_level(SimdLevel::Avx512);
  if (simd_level() != SimdLevel::Avx512) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  ThreadPool one(1), three(3);
  MatmulScratch scratch;
  std::mt19937 rng(37);
  const Shape shapes[] = {{16, 32}, {32, 96}, {48, 256}, {48, 768}, {272, 1056}};
  const std::pair<GgmlType, WeightLayout> layouts[] = {
      {GgmlType::IQ4_NL, WeightLayout::IQ4_NLTiles16},
      {GgmlType::Q5_0, WeightLayout::Q5_0Tiles16},
      {GgmlType::Q5_1, WeightLayout::Q5_1Tiles16},
      {GgmlType::Q4_1, WeightLayout::Q4_1Tiles16},
      {GgmlType::MXFP4, WeightLayout::MXFP4Tiles16}};
  for (const auto& [type, layout] : layouts)
    for (const Shape& shape : shapes)
      for (bool random_bytes : {false, true}) {
        RegroupedWeights w =
            make_regrouped_weights(type, layout, shape.rows, shape.cols, uint32_t(shape.rows));
        if (random_bytes)  // the f16 d and m +-1, +-0.5; MXFP4's E8M0 scale 1 or 0.5
          randomize_but_scales(w, rng, [&, type = type](uint8_t* blk, size_t, size_t off) {
            if (type == GgmlType::MXFP4) {
              blk[0] = off % 3 ? 128 : 127;
              return;
            }
            const uint16_t d = off % 3 ? 0x3c00 : 0xbc00, m = off % 5 ? 0x3800 : 0xb800;
            std::memcpy(blk, &d, 2);
            if (has_block_min(type)) std::memcpy(blk + 2, &m, 2);
          });
        ASSERT_NO_FATAL_FAILURE(expect_tiles_bitwise_scalar(
            w, {1, 2, 3, 5, 7, 13, 33}, {&one, &three}, random_bytes, rng, scratch));
      }
}

// In a batch with other weights (matmul_batch: Q8-rows and Q8-blocks forms
// side by side, the Stealing split), each output is its own matmul's bits.
TEST(MatmulBlock32Tiles16, BatchedWithOtherLayoutsEachOutputIsItsOwnMatmul) {
  LevelGuard guard;
  set_simd_level(SimdLevel::Avx512);
  if (simd_level() != SimdLevel::Avx512) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  ThreadPool two(2);
  MatmulScratch scratch;
  const int64_t cols = 512;
  const RegroupedWeights a =
      make_regrouped_weights(GgmlType::IQ4_NL, WeightLayout::IQ4_NLTiles16, 96, cols, 5);
  const RegroupedWeights b =
      make_regrouped_weights(GgmlType::Q4_1, WeightLayout::Q4_1Tiles16, 320, cols, 6);
  const Weights c = make_weights(GgmlType::Q5_0, 48, cols, 7);
  for (int64_t n_tokens : {1, 2, 9, 40}) {
    const std::vector<float> x = make_activations(n_tokens, cols, 8);
    const WeightView views[] = {a.view, b.view, c.view};
    std::vector<float> together[3], alone[3];
    MatmulOutput outs[3];
    for (int i = 0; i < 3; ++i) {
      together[i].assign(size_t(views[i].rows * n_tokens), NAN);
      alone[i].assign(together[i].size(), NAN);
      outs[i] = MatmulOutput{views[i], together[i].data()};
    }
    matmul_batch(outs, x.data(), n_tokens, two, scratch);
    for (int i = 0; i < 3; ++i) {
      matmul(views[i], x.data(), n_tokens, alone[i].data(), two, scratch);
      ASSERT_EQ(0, std::memcmp(alone[i].data(), together[i].data(), alone[i].size() * 4))
          << "weight " << i << " tokens " << n_tokens;
    }
  }
}

// Q2_K rows in Q2_KTiles16: the tile kernel (1-2 tokens: decode; 3..31:
// token tiles of 4 and their remainders) and the panels decoded from the
// tiles (32 or more) give the scalar kernel's bits on native rows, on 1, 2
// and 3 threads (groups split unevenly), from one group to 25, one
// super-block to 7, on quantized rows and on rows of random bytes (every
// scale, min and 2-bit value against +-127 activations: the largest sums).
TEST(MatmulKquantTiles16, Q2_KBitwiseTheScalarKernelOnEveryPathTokenCountAndThreads) {
  LevelGuard guard;
  set_simd_level(SimdLevel::Avx512);
  if (simd_level() != SimdLevel::Avx512) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  ThreadPool one(1), two(2), three(3);
  MatmulScratch scratch;
  std::mt19937 rng(37);
  const Shape shapes[] = {{16, 256}, {48, 768}, {400, 1792}, {32, 2048}};
  for (const Shape& shape : shapes)
    for (bool random_bytes : {false, true}) {
      RegroupedWeights w = make_regrouped_weights(GgmlType::Q2_K, WeightLayout::Q2_KTiles16,
                                                  shape.rows, shape.cols, uint32_t(shape.cols));
      if (random_bytes)  // the f16 d and dmin at the block's end +-1, +-0.5
        randomize_but_scales(w, rng, [](uint8_t* blk, size_t block, size_t off) {
          const uint16_t d = off % 3 ? 0x3c00 : 0xbc00, dmin = off % 5 ? 0x3800 : 0xb800;
          std::memcpy(blk + block - 4, &d, 2);
          std::memcpy(blk + block - 2, &dmin, 2);
        });
      ASSERT_NO_FATAL_FAILURE(expect_tiles_bitwise_scalar(w, {1, 2, 3, 4, 5, 7, 9, 31, 32, 33, 41},
                                                          {&one, &two, &three}, random_bytes, rng,
                                                          scratch));
    }
}

// Q3_K rows in Q3_KTiles16: the tile kernel (1-2 token decode, token tiles
// of 4 and their remainders) and the kPanelQ3_K panels decoded from the tiles
// (33 and 40 tokens) give the scalar kernel's bits on the native rows, on 1,
// 2 and 3 threads (3 split the groups unevenly), for one group, three and
// nineteen, one super-block and several, on quantized rows and on rows of
// random bytes (every hmask, low-bit and 6-bit scale value, +-127
// activations: the largest sums the kernel's integers must hold).
TEST(MatmulKquantTiles16, Q3_KBitwiseTheScalarKernelOnEveryPathTokenCountAndThreads) {
  LevelGuard guard;
  set_simd_level(SimdLevel::Avx512);
  if (simd_level() != SimdLevel::Avx512) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  ThreadPool one(1), two(2), three(3);
  MatmulScratch scratch;
  std::mt19937 rng(47);
  const Shape shapes[] = {{16, 256}, {48, 768}, {304, 1792}, {48, 256}};
  for (const Shape& shape : shapes)
    for (bool random_bytes : {false, true}) {
      RegroupedWeights w = make_regrouped_weights(GgmlType::Q3_K, WeightLayout::Q3_KTiles16,
                                                  shape.rows, shape.cols, uint32_t(shape.rows));
      if (random_bytes)  // the f16 d, last in the block, +-1, +-0.5
        randomize_but_scales(w, rng, [](uint8_t* blk, size_t block, size_t off) {
          const uint16_t d = off % 3 ? 0x3c00 : (off % 7 ? 0xbc00 : 0x3800);
          std::memcpy(blk + block - 2, &d, 2);
        });
      ASSERT_NO_FATAL_FAILURE(expect_tiles_bitwise_scalar(
          w, {1, 2, 3, 5, 7, 33, 40}, {&one, &two, &three}, random_bytes, rng, scratch, 7));
    }
}

// IQ4_XS rows in IQ4_XSTiles16, as MatmulKquantTiles16 checks the K-quant
// tiles: decode (1-2 tokens), token tiles of 4 and their remainders, and the
// panels decoded from the tiles (32 or more) give the scalar kernel's bits
// on native rows at 1, 2 and 3 threads (groups split unevenly: 17 groups),
// on quantized rows and on rows of random bytes (every scale, level -127
// under factor -32, +-127 activations). Columns: one super-block and several.
TEST(MatmulKquantTiles16, IQ4_XSBitwiseTheScalarKernelOnEveryPathTokenCountAndThreads) {
  LevelGuard guard;
  set_simd_level(SimdLevel::Avx512);
  if (simd_level() != SimdLevel::Avx512) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  ThreadPool one(1), two(2), three(3);
  MatmulScratch scratch;
  std::mt19937 rng(37);
  const Shape shapes[] = {{16, 256}, {48, 768}, {272, 1792}};
  for (const Shape& shape : shapes)
    for (bool random_bytes : {false, true}) {
      RegroupedWeights w = make_regrouped_weights(GgmlType::IQ4_XS, WeightLayout::IQ4_XSTiles16,
                                                  shape.rows, shape.cols, uint32_t(shape.rows));
      if (random_bytes)  // the f16 super-scale +-1, +-0.5
        randomize_but_scales(w, rng, [](uint8_t* blk, size_t, size_t off) {
          const uint16_t d = off % 3 ? (off % 5 ? 0x3c00 : 0x3800) : 0xbc00;
          std::memcpy(blk, &d, 2);
        });
      ASSERT_NO_FATAL_FAILURE(expect_tiles_bitwise_scalar(
          w, {1, 2, 3, 4, 5, 7, 31, 32, 33, 41}, {&one, &two, &three}, random_bytes, rng, scratch));
    }
}

// Invariant 1 of DESIGN.md: a token's rows are the same bits alone (decode,
// 3 threads) as in a batch of 37 on one thread.
TEST(MatmulInterleaved16, EveryTokenIsBitwiseTheSameAloneAndInABatch) {
  LevelGuard guard;
  set_simd_level(SimdLevel::Avx512);
  if (simd_level() != SimdLevel::Avx512) GTEST_SKIP() << "no AVX-512 on this CPU";
  ThreadPool one(1), three(3);
  MatmulScratch scratch;
  const int64_t rows = 208, cols = 768, n_tokens = 37;
  for (GgmlType type : kInterleavedTypes) {
    const RegroupedWeights w = make_interleaved16_weights(type, rows, cols, 91);
    const std::vector<float> x = make_activations(n_tokens, cols, 92);
    std::vector<float> batch(size_t(rows * n_tokens));
    matmul(w.view, x.data(), n_tokens, batch.data(), one, scratch);
    ASSERT_NO_FATAL_FAILURE(
        expect_each_token_alone_is_bitwise(w.view, x, n_tokens, batch, three, scratch));
  }
}

}  // namespace
}  // namespace kvforge
