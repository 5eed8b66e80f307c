#include "reference_forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/formats/f16.h"
#include "core/formats/row_codec.h"

namespace kvforge::testing {
namespace {

// A row of a matrix regrouped at load (WeightLayout, as matmul.h describes
// it: per 8 blocks their 8 f16 scales, then two quads of quants) back in the
// file's block layout.
std::vector<uint8_t> native_row(const WeightView& w, const uint8_t* row) {
  const size_t blocks = size_t(w.cols / 32);
  const bool q4 = w.layout == WeightLayout::Q4_0Groups8;
  const size_t block_bytes = q4 ? 18 : 34;
  std::vector<uint8_t> out(blocks * block_bytes);
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* group = row + (b / 8) * 8 * block_bytes;
    uint8_t* dst = &out[b * block_bytes];
    std::memcpy(dst, group + 2 * (b % 8), 2);
    if (q4) {
      std::memcpy(dst + 2, group + 16 + 16 * (b % 8), 16);
    } else {
      const uint8_t* quad = group + 16 + 128 * ((b % 8) / 4);
      for (size_t i = 0; i < 16; ++i) {
        dst[2 + i] = quad[16 * (b % 4) + i] ^ 0x80;
        dst[2 + 16 + i] = quad[64 + 16 * (b % 4) + i] ^ 0x80;
      }
    }
  }
  return out;
}

// Row r of a Q8_0Tiles16 / Q4_0Tiles16 matrix (WeightLayout, matmul.h: per
// 16-row group, per block 512 bytes of Q8_0 quants stored + 128 or 256
// bytes of Q4_0 nibble bytes, interleaved 4 bytes by 4, then every block's 16
// scales) back in the file's block layout.
std::vector<uint8_t> native_tiles16_row(const WeightView& w, int64_t r) {
  const bool q8 = w.layout == WeightLayout::Q8_0Tiles16;
  const size_t quant_bytes = q8 ? 32 : 16;  // per row and block
  const size_t block_bytes = 2 + quant_bytes, blocks = size_t(w.cols / 32),
               rb = blocks * block_bytes;
  const uint8_t* group = static_cast<const uint8_t*>(w.data) + size_t(r / 16) * 16 * rb;
  const size_t n = size_t(r % 16);
  std::vector<uint8_t> out(rb);
  for (size_t b = 0; b < blocks; ++b) {
    std::memcpy(&out[block_bytes * b], group + 16 * quant_bytes * blocks + 32 * b + 2 * n, 2);
    for (size_t i = 0; i < quant_bytes; ++i) {
      const uint8_t stored = group[16 * quant_bytes * b + 64 * (i / 4) + 4 * n + i % 4];
      out[block_bytes * b + 2 + i] = q8 ? stored ^ 0x80 : stored;
    }
  }
  return out;
}

// Row r of a Q4_KTiles16 or Q5_KTiles16 matrix (WeightLayout, matmul.h: per
// 16-row group and super-block 2304 or 2816 bytes: the rows' nibble bytes,
// for Q5_K their qh bytes, then their scale bytes, each interleaved 4 by 4,
// then their d and their dmin) as the file's blocks.
std::vector<uint8_t> native_q4_k_tiles16_row(const WeightView& w, int64_t r) {
  const bool q5 = w.layout == WeightLayout::Q5_KTiles16;
  const size_t block = q5 ? 176 : 144, tile_bytes = 16 * block, qh = q5 ? 32 : 0;
  const size_t blocks = size_t(w.cols / 256), n = size_t(r % 16);
  const uint8_t* group = static_cast<const uint8_t*>(w.data) + size_t(r / 16) * blocks * tile_bytes;
  std::vector<uint8_t> out(blocks * block);
  const auto bytes = [&](const uint8_t* part, size_t count, uint8_t* to) {
    for (size_t i = 0; i < count; ++i) to[i] = part[64 * (i / 4) + 4 * n + i % 4];
  };
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* tile = group + tile_bytes * b;
    const uint8_t* scales = tile + 2048 + 16 * qh;
    uint8_t* dst = &out[block * b];  // d, dmin, 12 scale bytes, [32 qh bytes,] 128 nibble bytes
    std::memcpy(dst, scales + 192 + 2 * n, 2);
    std::memcpy(dst + 2, scales + 224 + 2 * n, 2);
    bytes(scales, 12, dst + 4);
    bytes(tile + 2048, qh, dst + 16);
    bytes(tile, 128, dst + 16 + qh);
  }
  return out;
}

// Row r of a Q6_KTiles16 matrix (WeightLayout, matmul.h: per 16-row group
// and super-block a 3328-byte tile of the rows' ql and qh bytes in 48 lines
// of 4 bytes per row, then their scale bytes interleaved 4 by 4; the tiles'
// d after all tiles) as the file's blocks.
std::vector<uint8_t> native_q6_k_tiles16_row(const WeightView& w, int64_t r) {
  const size_t blocks = size_t(w.cols / 256), n = size_t(r % 16), g = size_t(r / 16);
  const auto* data = static_cast<const uint8_t*>(w.data);
  const size_t tiles = size_t(w.rows / 16) * blocks;
  std::vector<uint8_t> out(blocks * 210);
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* tile = data + (g * blocks + b) * 3328;
    uint8_t* dst = &out[210 * b];  // ql 128, qh 64, scales 16, d 2
    for (size_t q = 0; q < 4; ++q)
      for (size_t c = 0; c < 4; ++c) {
        const size_t h = q / 2, s = q % 2;
        const uint8_t* line = tile + 768 * q + 192 * c + 4 * n;
        std::memcpy(dst + 64 * h + 16 * s + 4 * c, line, 4);
        std::memcpy(dst + 64 * h + 32 + 16 * s + 4 * c, line + 64, 4);
        std::memcpy(dst + 128 + 32 * h + 16 * s + 4 * c, line + 128, 4);
      }
    for (size_t i = 0; i < 16; ++i) dst[192 + i] = tile[3072 + 64 * (i / 4) + 4 * n + i % 4];
    std::memcpy(dst + 208, data + tiles * 3328 + (g * blocks + b) * 32 + 2 * n, 2);
  }
  return out;
}

// Row r of an IQ4_NLTiles16 / Q5_0Tiles16 / Q5_1Tiles16 / Q4_1Tiles16 /
// MXFP4Tiles16 matrix (WeightLayout, matmul.h: per 16-row group and block
// the rows' nibble bytes interleaved 4 by 4, for Q5_0 / Q5_1 then their
// fifth bits, 8 to a byte; after all blocks per block the rows' d, then for
// Q5_1 / Q4_1 their m; MXFP4: their e bytes) as the file's blocks: d (e),
// [m,] [qh,] qs.
std::vector<uint8_t> native_block32_tiles16_row(const WeightView& w, int64_t r) {
  const bool fifth = w.layout == WeightLayout::Q5_0Tiles16 || w.layout == WeightLayout::Q5_1Tiles16;
  const bool min = w.layout == WeightLayout::Q5_1Tiles16 || w.layout == WeightLayout::Q4_1Tiles16;
  const bool e8m0 = w.layout == WeightLayout::MXFP4Tiles16;
  const size_t d_bytes = e8m0 ? 1 : 2;
  const size_t block = 16 + d_bytes + (fifth ? 4 : 0) + (min ? 2 : 0), blocks = size_t(w.cols / 32);
  const size_t quant_bytes = fifth ? 320 : 256, n = size_t(r % 16);
  const size_t scale_bytes = e8m0 ? 16 : min ? 64 : 32;
  const uint8_t* group = static_cast<const uint8_t*>(w.data) + size_t(r / 16) * 16 * blocks * block;
  std::vector<uint8_t> out(blocks * block);
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* q = group + quant_bytes * b;
    const uint8_t* scales = group + quant_bytes * blocks + scale_bytes * b;
    uint8_t* dst = &out[block * b];
    std::memcpy(dst, scales + d_bytes * n, d_bytes);
    if (min) std::memcpy(dst + 2, scales + 32 + 2 * n, 2);
    if (fifth) {
      uint32_t qh = 0;
      for (uint32_t e = 0; e < 32; ++e) {
        const uint32_t j = e % 4, bit = e < 16 ? e / 4 : 4 + (e - 16) / 4;
        qh |= uint32_t((q[256 + 4 * n + j] >> bit) & 1) << e;
      }
      std::memcpy(dst + (min ? 4 : 2), &qh, 4);
    }
    for (size_t i = 0; i < 16; ++i) dst[block - 16 + i] = q[64 * (i / 4) + 4 * n + i % 4];
  }
  return out;
}

// Row r of a Q2_KTiles16 matrix (WeightLayout, matmul.h: per 16-row group
// and super-block a 1344-byte tile of the rows' scale bytes, then their qs
// bytes, each interleaved 4 by 4, then their d and their dmin) as the
// file's blocks.
std::vector<uint8_t> native_q2_k_tiles16_row(const WeightView& w, int64_t r) {
  const size_t blocks = size_t(w.cols / 256), n = size_t(r % 16);
  const uint8_t* group = static_cast<const uint8_t*>(w.data) + size_t(r / 16) * blocks * 1344;
  std::vector<uint8_t> out(blocks * 84);
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* tile = group + 1344 * b;
    uint8_t* dst = &out[84 * b];  // 16 scale bytes, 64 qs bytes, d, dmin
    for (size_t i = 0; i < 16; ++i) dst[i] = tile[64 * (i / 4) + 4 * n + i % 4];
    for (size_t i = 0; i < 64; ++i) dst[16 + i] = tile[256 + 64 * (i / 4) + 4 * n + i % 4];
    std::memcpy(dst + 80, tile + 1280 + 2 * n, 2);
    std::memcpy(dst + 82, tile + 1312 + 2 * n, 2);
  }
  return out;
}

// Row r of a Q3_KTiles16 matrix (WeightLayout, matmul.h: per 16-row group
// and super-block a 1728-byte tile of 27 lines, 4 bytes of each row a line:
// qs 0..31 each beside the hmask bytes of the same columns, qs 32..63, the 12
// scale bytes; the tiles' d after all tiles) as the file's blocks.
std::vector<uint8_t> native_q3_k_tiles16_row(const WeightView& w, int64_t r) {
  const size_t blocks = size_t(w.cols / 256), n = size_t(r % 16), g = size_t(r / 16);
  const auto* data = static_cast<const uint8_t*>(w.data);
  const size_t tiles = size_t(w.rows / 16) * blocks;
  std::vector<uint8_t> out(blocks * 110);
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* tile = data + (g * blocks + b) * 1728;
    uint8_t* dst = &out[110 * b];  // hmask 32, qs 64, scales 12, d 2
    for (size_t c = 0; c < 8; ++c) {
      std::memcpy(dst + 32 + 4 * c, tile + 128 * c + 4 * n, 4);
      std::memcpy(dst + 4 * c, tile + 128 * c + 64 + 4 * n, 4);
      std::memcpy(dst + 64 + 4 * c, tile + 1024 + 64 * c + 4 * n, 4);
    }
    for (size_t i = 0; i < 3; ++i) std::memcpy(dst + 96 + 4 * i, tile + 1536 + 64 * i + 4 * n, 4);
    std::memcpy(dst + 108, data + tiles * 1728 + (g * blocks + b) * 32 + 2 * n, 2);
  }
  return out;
}

// Row r of an IQ4_XSTiles16 matrix (WeightLayout, matmul.h: per 16-row
// group and super-block 2176 bytes: the rows' scales_l bytes interleaved 4
// by 4, their scales_h, their d, then their nibble bytes interleaved 4 by 4)
// as the file's blocks.
std::vector<uint8_t> native_iq4_xs_tiles16_row(const WeightView& w, int64_t r) {
  const size_t blocks = size_t(w.cols / 256), n = size_t(r % 16);
  const uint8_t* group = static_cast<const uint8_t*>(w.data) + size_t(r / 16) * blocks * 2176;
  std::vector<uint8_t> out(blocks * 136);
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* tile = group + 2176 * b;
    uint8_t* dst = &out[136 * b];  // d, scales_h, 4 scales_l bytes, 128 nibble bytes
    std::memcpy(dst, tile + 96 + 2 * n, 2);
    std::memcpy(dst + 2, tile + 64 + 2 * n, 2);
    std::memcpy(dst + 4, tile + 4 * n, 4);
    for (size_t i = 0; i < 128; ++i) dst[8 + i] = tile[128 + 64 * (i / 4) + 4 * n + i % 4];
  }
  return out;
}

// Row r of an F16Interleaved16 / BF16Interleaved16 matrix (per 16-row
// group, column k's 16 2-byte values side by side) back as the file's row.
std::vector<uint8_t> native_interleaved16_row(const WeightView& w, int64_t r) {
  const auto* group = static_cast<const uint16_t*>(w.data) + size_t(r / 16) * 16 * size_t(w.cols);
  std::vector<uint8_t> out(size_t(w.cols) * 2);
  for (size_t k = 0; k < size_t(w.cols); ++k)
    std::memcpy(&out[2 * k], group + 16 * k + size_t(r % 16), 2);
  return out;
}

std::vector<float> to_f32(const WeightView& w);

// The whole matrix [rows][cols] its column parts make up.
std::vector<float> to_f32(const ColumnParts& w) {
  std::vector<float> out(size_t(w.rows * w.cols));
  int64_t first = 0;
  for (const WeightView& part : w.parts) {
    const std::vector<float> p = to_f32(part);
    for (int64_t r = 0; r < w.rows; ++r)
      std::copy_n(p.data() + r * part.cols, part.cols, out.data() + r * w.cols + first);
    first += part.cols;
  }
  return out;
}

std::vector<float> to_f32(const WeightView& w) {
  std::vector<float> out(size_t(w.rows * w.cols));
  const size_t rb = row_bytes(w.type, size_t(w.cols));
  for (int64_t r = 0; r < w.rows; ++r) {
    const uint8_t* row = static_cast<const uint8_t*>(w.data) + size_t(r) * rb;
    std::vector<uint8_t> native;
    if (w.layout == WeightLayout::Q8_0Tiles16 || w.layout == WeightLayout::Q4_0Tiles16) {
      native = native_tiles16_row(w, r);
      row = native.data();
    } else if (w.layout == WeightLayout::Q4_KTiles16 || w.layout == WeightLayout::Q5_KTiles16) {
      native = native_q4_k_tiles16_row(w, r);
      row = native.data();
    } else if (w.layout == WeightLayout::Q6_KTiles16) {
      native = native_q6_k_tiles16_row(w, r);
      row = native.data();
    } else if (w.layout == WeightLayout::IQ4_NLTiles16 || w.layout == WeightLayout::Q5_0Tiles16 ||
               w.layout == WeightLayout::Q5_1Tiles16 || w.layout == WeightLayout::Q4_1Tiles16 ||
               w.layout == WeightLayout::MXFP4Tiles16) {
      native = native_block32_tiles16_row(w, r);
      row = native.data();
    } else if (w.layout == WeightLayout::Q2_KTiles16) {
      native = native_q2_k_tiles16_row(w, r);
      row = native.data();
    } else if (w.layout == WeightLayout::Q3_KTiles16) {
      native = native_q3_k_tiles16_row(w, r);
      row = native.data();
    } else if (w.layout == WeightLayout::IQ4_XSTiles16) {
      native = native_iq4_xs_tiles16_row(w, r);
      row = native.data();
    } else if (w.layout == WeightLayout::F16Interleaved16 ||
               w.layout == WeightLayout::BF16Interleaved16) {
      native = native_interleaved16_row(w, r);
      row = native.data();
    } else if (w.layout != WeightLayout::Native) {
      native = native_row(w, row);
      row = native.data();
    }
    dequantize_row(w.type, row, out.data() + size_t(r * w.cols), w.cols);
  }
  return out;
}

// out(d) = W(d, n) · x(n)
void matvec(std::vector<float>& out, const std::vector<float>& x, const std::vector<float>& w,
            int n, int d) {
  out.assign(size_t(d), 0.0f);
  for (int i = 0; i < d; ++i) {
    double acc = 0;
    for (int j = 0; j < n; ++j) acc += double(w[size_t(i) * n + j]) * x[size_t(j)];
    out[size_t(i)] = float(acc);
  }
}

std::vector<float> rmsnorm(const std::vector<float>& x, const std::vector<float>& weight,
                           float eps) {
  double ss = 0;
  for (float v : x) ss += double(v) * v;
  const double scale = 1.0 / std::sqrt(ss / double(x.size()) + eps);
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = float(x[i] * scale * weight[i]);
  return out;
}

// GELU (tanh form) as the engine defines it after llama.cpp: the input
// rounded to f16, GELU in double, the result rounded to f16; identity from
// 10 up, 0 from -10 down.
double gelu_through_f16(double g) {
  if (g <= -10) return 0;
  if (g >= 10) return g;
  const double x = fp16_to_fp32(fp32_to_fp16(float(g)));
  const double y =
      0.5 * x * (1 + std::tanh(std::sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
  return fp16_to_fp32(fp32_to_fp16(float(y)));
}

}  // namespace

ReferenceForward::ReferenceForward(const Model& model, int max_seq_len)
    : c_(model.config()), max_seq_len_(max_seq_len) {
  const ModelWeights& w = model.weights();
  token_embd_ = to_f32(w.token_embd);
  output_norm_ = w.output_norm;
  output_ = to_f32(w.output);
  // The factors the engine documents choosing: rope_freqs, else LongRoPE's
  // long ones when the trained context exceeds the original one, else short.
  rope_factors_ = !w.rope_freqs.empty() ? w.rope_freqs
                  : c_.n_ctx_train > c_.rope.n_ctx_orig && !w.rope_factors_long.empty()
                      ? w.rope_factors_long
                      : w.rope_factors_short;
  for (const LayerWeights& lw : w.layers) {
    layers_.push_back(Layer{lw.attn_norm,
                            to_f32(lw.attn_q),
                            to_f32(lw.attn_k),
                            to_f32(lw.attn_v),
                            lw.bias_q,
                            lw.bias_k,
                            lw.bias_v,
                            to_f32(lw.attn_output),
                            lw.ffn_norm,
                            to_f32(lw.ffn_gate),
                            to_f32(lw.ffn_down),
                            to_f32(lw.ffn_up),
                            lw.attn_q_norm,
                            lw.attn_k_norm,
                            lw.attn_post_norm,
                            lw.ffn_post_norm,
                            {},
                            {},
                            {},
                            {},
                            {},
                            lw.bias_o,
                            lw.attn_sinks,
                            lw.moe.gate_bias,
                            lw.moe.up_bias,
                            lw.moe.down_bias});
    Layer& l = layers_.back();
    if (c_.moe.n_expert == 0) continue;
    l.router = to_f32(lw.moe.router);
    l.router_bias = lw.moe.router_bias;
    for (int e = 0; e < c_.moe.n_expert; ++e) {
      l.exp_gate.push_back(to_f32(lw.moe.gate[size_t(e)]));
      l.exp_up.push_back(to_f32(lw.moe.up[size_t(e)]));
      l.exp_down.push_back(to_f32(lw.moe.down[size_t(e)]));
    }
  }
  const size_t cache = size_t(c_.n_layer) * size_t(max_seq_len) * size_t(c_.kv_dim());
  key_cache_.assign(cache, 0.0f);
  value_cache_.assign(cache, 0.0f);
}

// θ_i = pos · base^(-2i/d) / ff_i, scaled by freq_scale; YaRN mixes the
// scaled and unscaled angle along a ramp over the dimensions between the
// wavelengths of beta_fast and beta_slow turns over n_ctx_orig, and scales
// the magnitude by 1 + 0.1 ln(1/freq_scale); attn_factor scales it too.
void ReferenceForward::rope(float* head, int layer, int32_t pos) const {
  const RopeConfig& r = c_.layer_rope(layer);
  const int d = c_.rope_dim;
  const bool neox = c_.rope_style == RopeStyle::Neox;
  const double pi = 3.14159265358979323846;
  const auto corr_dim = [&](double turns) {
    return d * std::log(r.n_ctx_orig / (turns * 2 * pi)) / (2 * std::log(double(r.freq_base)));
  };
  const double lo = std::max(0.0, std::floor(corr_dim(r.beta_fast)));
  const double hi = std::min(double(d - 1), std::ceil(corr_dim(r.beta_slow)));
  double magnitude = r.attn_factor;
  if (r.ext_factor != 0) magnitude *= 1 + 0.1 * std::log(1.0 / r.freq_scale);
  for (int i = 0; i < d / 2; ++i) {
    const double ff = rope_factors_.empty() ? 1.0 : rope_factors_[size_t(i)];
    const double extrap = pos * std::pow(double(r.freq_base), -2.0 * i / d) / ff;
    double angle = r.freq_scale * extrap;
    if (r.ext_factor != 0) {
      const double ramp = 1 - std::clamp((i - lo) / std::max(0.001, hi - lo), 0.0, 1.0);
      const double mix = ramp * r.ext_factor;
      angle = angle * (1 - mix) + extrap * mix;
    }
    const int a = neox ? i : 2 * i;
    const int b = neox ? i + d / 2 : 2 * i + 1;
    const double x0 = head[a], x1 = head[b];
    head[a] = float((x0 * std::cos(angle) - x1 * std::sin(angle)) * magnitude);
    head[b] = float((x0 * std::sin(angle) + x1 * std::cos(angle)) * magnitude);
  }
}

// Router logits, the k experts with the largest (ties: lower index first),
// their weights: softmax over all experts or over the k picked (the
// architecture's gating), divided by their sum where norm_topk (at least
// 2^-14, llama.cpp's clamp), times weights_scale; then the weighted sum of
// the k experts' SwiGLU FFNs.
std::vector<float> ReferenceForward::moe(const Layer& w, const std::vector<float>& x) const {
  const MoeConfig& m = c_.moe;
  const int dim = c_.n_embd, ff = m.n_ff_exp, k = m.n_expert_used;
  std::vector<float> logits, g, u, y;
  matvec(logits, x, w.router, dim, m.n_expert);
  for (size_t i = 0; i < w.router_bias.size(); ++i) logits[i] += w.router_bias[i];
  std::vector<int> order(static_cast<size_t>(m.n_expert));
  for (int i = 0; i < m.n_expert; ++i) order[size_t(i)] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return logits[size_t(a)] > logits[size_t(b)]; });
  const int n_soft = m.gating == ExpertGating::SoftmaxThenTopK ? m.n_expert : k;
  double mx = -INFINITY, sum = 0;
  for (int j = 0; j < n_soft; ++j) mx = std::max(mx, double(logits[size_t(order[size_t(j)])]));
  for (int j = 0; j < n_soft; ++j) sum += std::exp(logits[size_t(order[size_t(j)])] - mx);
  std::vector<double> weight(static_cast<size_t>(k));
  for (int j = 0; j < k; ++j)
    weight[size_t(j)] = std::exp(logits[size_t(order[size_t(j)])] - mx) / sum;
  double total = 0;
  for (double v : weight) total += v;
  for (double& v : weight)
    v = (m.norm_topk ? v / std::max(total, 6.103515625e-5) : v) * m.weights_scale;
  std::vector<double> acc(static_cast<size_t>(dim), 0.0);
  for (int j = 0; j < k; ++j) {
    const size_t e = size_t(order[size_t(j)]);
    matvec(g, x, w.exp_gate[e], dim, ff);
    matvec(u, x, w.exp_up[e], dim, ff);
    const auto bias = [e](const std::vector<float>& b, size_t n, size_t i) {
      return b.empty() ? 0.0 : double(b[e * n + i]);
    };
    for (int i = 0; i < ff; ++i) {
      double gi = g[size_t(i)] + bias(w.exp_gate_bias, size_t(ff), size_t(i));
      double ui = u[size_t(i)] + bias(w.exp_up_bias, size_t(ff), size_t(i));
      if (c_.ffn_act == FfnActivation::SwigluOai) {  // gpt-oss: clamped, sigmoid(1.702 g), up + 1
        gi = std::min(gi, 7.0);
        ui = std::clamp(ui, -7.0, 7.0) + 1;
        g[size_t(i)] = float(gi / (1.0 + std::exp(-1.702 * gi)) * ui);
      } else {
        g[size_t(i)] = float(gi / (1.0 + std::exp(-gi)) * ui);
      }
    }
    matvec(y, g, w.exp_down[e], ff, dim);
    for (int i = 0; i < dim; ++i)
      y[size_t(i)] += float(bias(w.exp_down_bias, size_t(dim), size_t(i)));
    for (int i = 0; i < dim; ++i) acc[size_t(i)] += weight[size_t(j)] * y[size_t(i)];
  }
  return std::vector<float>(acc.begin(), acc.end());
}

std::vector<float> ReferenceForward::forward(int32_t token, int32_t pos) {
  const int dim = c_.n_embd, kv_dim = c_.kv_dim(), hs = c_.head_dim;
  std::vector<float> x(token_embd_.begin() + ptrdiff_t(token) * dim,
                       token_embd_.begin() + ptrdiff_t(token + 1) * dim);
  for (float& e : x) e = float(double(e) * c_.embd_scale);
  std::vector<float> q, k, v, att_out(size_t(c_.q_dim())), o, hb, hb2, ffn_out;
  const auto add_residual = [&](std::vector<float>& out, const std::vector<float>& post_norm) {
    if (!post_norm.empty()) out = rmsnorm(out, post_norm, c_.rms_eps);
    for (int i = 0; i < dim; ++i) x[size_t(i)] += out[size_t(i)];
  };
  const auto norm_heads = [&](std::vector<float>& heads, int n, const std::vector<float>& weight) {
    if (weight.empty()) return;
    for (int h = 0; h < n; ++h) {
      std::vector<float> head(heads.begin() + h * hs, heads.begin() + (h + 1) * hs);
      head = rmsnorm(head, weight, c_.rms_eps);
      std::copy(head.begin(), head.end(), heads.begin() + h * hs);
    }
  };
  for (int l = 0; l < c_.n_layer; ++l) {
    const Layer& w = layers_[size_t(l)];
    const std::vector<float> xb = rmsnorm(x, w.attn_norm, c_.rms_eps);
    matvec(q, xb, w.wq, dim, c_.q_dim());
    matvec(k, xb, w.wk, dim, kv_dim);
    matvec(v, xb, w.wv, dim, kv_dim);
    for (size_t i = 0; i < w.bq.size(); ++i) q[i] += w.bq[i];
    for (size_t i = 0; i < w.bk.size(); ++i) k[i] += w.bk[i], v[i] += w.bv[i];
    norm_heads(q, c_.n_head, w.q_norm);
    norm_heads(k, c_.n_kv_head, w.k_norm);
    for (int h = 0; h < c_.n_head; ++h) rope(&q[size_t(h * hs)], l, pos);
    for (int h = 0; h < c_.n_kv_head; ++h) rope(&k[size_t(h * hs)], l, pos);
    const size_t loff = size_t(l) * size_t(max_seq_len_) * size_t(kv_dim);
    std::memcpy(&key_cache_[loff + size_t(pos) * kv_dim], k.data(), size_t(kv_dim) * 4);
    std::memcpy(&value_cache_[loff + size_t(pos) * kv_dim], v.data(), size_t(kv_dim) * 4);

    // Multi-head attention over the window (all earlier positions without
    // one); query head h reads kv head h / (n_head / n_kv_head).
    const int first = c_.window(l) > 0 ? std::max(0, pos - c_.window(l) + 1) : 0;
    for (int h = 0; h < c_.n_head; ++h) {
      const float* qh = &q[size_t(h * hs)];
      const int kvh = h / c_.gqa_group();
      std::vector<double> att(size_t(pos + 1), -INFINITY);
      double max_score = -INFINITY;
      for (int t = first; t <= pos; ++t) {
        const float* kt = &key_cache_[loff + size_t(t) * kv_dim + size_t(kvh * hs)];
        double score = 0;
        for (int i = 0; i < hs; ++i) score += double(qh[i]) * kt[i];
        score *= c_.attn_scale;
        if (c_.attn_softcap > 0) score = c_.attn_softcap * std::tanh(score / c_.attn_softcap);
        att[size_t(t)] = score;
        max_score = std::max(max_score, att[size_t(t)]);
      }
      // gpt-oss's sink: one more logit in the softmax, weighing no value.
      const double sink = w.sinks.empty() ? -INFINITY : double(w.sinks[size_t(h)]);
      max_score = std::max(max_score, sink);
      double sum = w.sinks.empty() ? 0.0 : std::exp(sink - max_score);
      for (int t = first; t <= pos; ++t)
        sum += (att[size_t(t)] = std::exp(att[size_t(t)] - max_score));
      for (int i = 0; i < hs; ++i) {
        double acc = 0;
        for (int t = first; t <= pos; ++t)
          acc +=
              att[size_t(t)] / sum * value_cache_[loff + size_t(t) * kv_dim + size_t(kvh * hs + i)];
        att_out[size_t(h * hs + i)] = float(acc);
      }
    }
    matvec(o, att_out, w.wo, c_.q_dim(), dim);
    for (size_t i = 0; i < w.bo.size(); ++i) o[i] += w.bo[i];
    add_residual(o, w.attn_post_norm);

    // Gated feed-forward: w2(act(w1 x) * w3 x), act = SiLU or GELU (tanh form).
    const std::vector<float> xb2 = rmsnorm(x, w.ffn_norm, c_.rms_eps);
    if (c_.moe.n_expert > 0) {
      ffn_out = moe(w, xb2);
      add_residual(ffn_out, w.ffn_post_norm);
      continue;
    }
    const int ff = c_.layer_n_ff(l);  // the layer's FFN rows (Gemma 4's double-wide layers)
    matvec(hb, xb2, w.w1, dim, ff);
    matvec(hb2, xb2, w.w3, dim, ff);
    for (int i = 0; i < ff; ++i) {
      const double g = hb[size_t(i)];
      const double act =
          c_.ffn_act == FfnActivation::GeluTanh ? gelu_through_f16(g) : g / (1.0 + std::exp(-g));
      hb[size_t(i)] = float(act * hb2[size_t(i)]);
    }
    matvec(ffn_out, hb, w.w2, ff, dim);
    add_residual(ffn_out, w.ffn_post_norm);
  }
  const std::vector<float> xf = rmsnorm(x, output_norm_, c_.rms_eps);
  std::vector<float> logits;
  matvec(logits, xf, output_, dim, c_.n_vocab);
  if (c_.final_softcap > 0)
    for (float& z : logits) z = float(c_.final_softcap * std::tanh(z / c_.final_softcap));
  return logits;
}

}  // namespace kvforge::testing
