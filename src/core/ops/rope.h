// Rotary position embedding (RoPE).
//
// For pair i (0 <= i < rope_dim/2) the angle is pos * base^(-2i/rope_dim).
// Which two dimensions form pair i depends on the layout:
//   adjacent (GGUF llama): (2i, 2i+1)
//   neox (qwen2 etc.):     (i, i + rope_dim/2)
// Dimensions at or beyond rope_dim are left unrotated.
#pragma once

#include <cstdint>
#include <vector>

namespace kvforge {

class RopeTable {
 public:
  RopeTable(int rope_dim, float freq_base, bool neox);
  int rope_dim() const { return rope_dim_; }
  int n_pairs() const { return rope_dim_ / 2; }
  bool neox() const { return neox_; }

  // cos/sin of every pair's angle at `pos`, computed in double from the exact
  // angle then rounded: cos_sin[2i] = cos, cos_sin[2i+1] = sin; [rope_dim].
  // Computed once per token per step and shared by all layers.
  void angles(int32_t pos, float* cos_sin) const;

  // Rotates `n_heads` heads of `head_dim` floats each, stored back to back.
  void apply(float* heads, int n_heads, int head_dim, const float* cos_sin) const;

 private:
  int rope_dim_;
  bool neox_;
  std::vector<double> inv_freq_;  // [rope_dim/2]: base^(-2i/rope_dim)
};

}  // namespace kvforge
