// Hyperparameters of a LLaMA-family model, read from GGUF metadata
// (`<arch>.*` keys, arch = general.architecture).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/gguf/gguf_file.h"

namespace kvforge {

enum class Architecture { Llama, Qwen2 };

// How RoPE pairs up the dimensions of a head.
//  AdjacentPairs: (x[2i], x[2i+1]) — GGUF llama files (converters permute Q/K
//                 weights so that this equals the original rotate-half layout).
//  Neox:          (x[i], x[i + rope_dim/2]) — qwen2 and other "NEOX" models.
enum class RopeStyle { AdjacentPairs, Neox };

struct ModelConfig {
  Architecture arch = Architecture::Llama;
  std::string arch_name = "llama";
  std::string name;  // general.name, if any
  int n_vocab = 0;
  int n_embd = 0;
  int n_layer = 0;
  int n_ff = 0;
  int n_head = 0;
  int n_kv_head = 0;
  int head_dim = 0;  // n_embd / n_head unless <arch>.attention.key_length says otherwise
  int rope_dim = 0;  // dimensions rotated per head (<= head_dim)
  float rope_freq_base = 10000.0f;
  float rms_eps = 1e-5f;
  int n_ctx_train = 0;
  RopeStyle rope_style = RopeStyle::AdjacentPairs;
  bool qkv_bias = false;     // qwen2: Q/K/V projections have biases
  bool tied_output = false;  // output projection reuses token_embd (no output.weight)

  int q_dim() const { return n_head * head_dim; }
  int kv_dim() const { return n_kv_head * head_dim; }
  int gqa_group() const { return n_head / n_kv_head; }  // query heads per KV head
  // 2 (K and V) * layers * kv_dim * bytes per element.
  size_t kv_bytes_per_token(size_t bytes_per_elem) const {
    return size_t(2) * size_t(n_layer) * size_t(kv_dim()) * bytes_per_elem;
  }

  // Reads and validates the hyperparameters; throws std::runtime_error naming
  // the file and key ("model.gguf: llama.attention.head_count_kv = 3 does not divide ...").
  static ModelConfig from_gguf(const gguf::GgufFile& file);
};

}  // namespace kvforge
