// Rotary position embedding (RoPE), with the scalings GGUF models use, as
// ggml computes them (ggml_rope_ext with freq_factors, YaRN's ramp).
//
// For pair i (0 <= i < rope_dim/2) at position pos:
//   θ_extrap = pos · base^(-2i/rope_dim) / ff[i]     ff: per-frequency factors, else 1
//   θ_interp = freq_scale · θ_extrap
//   θ = θ_interp                                     no YaRN (ext_factor = 0)
//     = θ_interp·(1 − r_i) + θ_extrap·r_i             YaRN, r_i = ramp(i)·ext_factor
//   (cos, sin) = (cos θ, sin θ) · attn_factor · m    m = 1 + 0.1 ln(1/freq_scale) with YaRN, else 1
// where ramp(i) = 1 − clamp((i − lo) / max(0.001, hi − lo), 0, 1) and lo, hi
// are the dimensions whose wavelengths make beta_fast and beta_slow turns
// over n_ctx_orig positions (floor / ceil, clamped to [0, rope_dim − 1]).
//
// Which two dimensions form pair i depends on the layout:
//   adjacent (GGUF llama): (2i, 2i+1)
//   neox (qwen, gemma, phi3): (i, i + rope_dim/2)
// Dimensions at or beyond rope_dim are left unrotated.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace kvforge {

// How one layer's RoPE turns a position into angles (the formula above).
struct RopeConfig {
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;   // 1 / rope.scaling.factor for linear and yarn, else 1
  float ext_factor = 0.0f;   // yarn: 1 (mixes interpolation and extrapolation along the ramp)
  float attn_factor = 1.0f;  // cos and sin are multiplied by it (and by YaRN's m)
  float beta_fast = 32.0f;   // YaRN ramp ends, in turns over n_ctx_orig positions
  float beta_slow = 1.0f;
  int32_t n_ctx_orig = 0;  // the context the model was trained for (YaRN)
};

class RopeTable {
 public:
  // freq_factors: [rope_dim/2] divisors of each pair's frequency, or empty.
  RopeTable(int rope_dim, const RopeConfig& config, bool neox,
            std::span<const float> freq_factors = {});
  int rope_dim() const { return rope_dim_; }
  int n_pairs() const { return rope_dim_ / 2; }
  bool neox() const { return neox_; }

  // cos/sin of every pair's angle at `pos`, computed in double from the exact
  // angle then rounded: cos_sin[2i] = cos, cos_sin[2i+1] = sin; [rope_dim].
  // Computed once per token per step and shared by the layers using this table.
  void angles(int32_t pos, float* cos_sin) const;

  // Rotates `n_heads` heads of `head_dim` floats each, stored back to back.
  void apply(float* heads, int n_heads, int head_dim, const float* cos_sin) const;

 private:
  int rope_dim_;
  bool neox_;
  double freq_scale_;
  double magnitude_;                // attn_factor · m
  std::vector<double> inv_freq_;    // [rope_dim/2]: base^(-2i/rope_dim) / ff[i]
  std::vector<double> extrap_mix_;  // [rope_dim/2]: r_i (0 without YaRN)
};

}  // namespace kvforge
