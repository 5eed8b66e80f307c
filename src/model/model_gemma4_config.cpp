// Gemma 4's own keys, as llama.cpp's gemma4 loader reads them
// (src/models/gemma4.cpp there): per-layer token embeddings, the shared-KV
// tail, the windowed layers' head sizes, no query scaling.
#include <algorithm>
#include <string>

#include "model/model_config_parts.h"

namespace kvforge::config_detail {
namespace {

// The shared tail reads the last KV layer of its own kind (ModelConfig::
// kv_source): the file must have one of each kind there, as llama.cpp
// assumes without checking.
void check_shared_layers(const gguf::GgufFile& f, const ModelConfig& c) {
  const std::string key = c.arch_name + ".attention.shared_kv_layers";
  if (c.n_kv_shared == 0) return;
  if (c.n_layer - c.n_kv_shared < 2)
    fail(f, key + " = " + std::to_string(c.n_kv_shared) + " leaves fewer than 2 of " +
                std::to_string(c.n_layer) + " layers keeping K/V");
  for (int l = c.n_layer - c.n_kv_shared; l < c.n_layer; ++l) {
    const int src = c.kv_source(l);
    if (c.window(src) != c.window(l))
      fail(f, key + " = " + std::to_string(c.n_kv_shared) + ": layer " + std::to_string(l) +
                  " (window " + std::to_string(c.window(l)) + ") would read the K/V of layer " +
                  std::to_string(src) + " (window " + std::to_string(c.window(src)) + ")");
  }
}

}  // namespace

void read_gemma4(const gguf::GgufFile& f, ModelConfig& c) {
  const std::string a = c.arch_name + ".";
  c.attn_scale = 1.0f;  // Gemma 4 scales nothing: its Q/K norms set the scores' range
  c.v_norm = true;
  // 0 (or no key): no per-layer embeddings.
  const std::string ple = a + "embedding_length_per_layer_input";
  if (f.has(ple) && f.get_u64(ple) > 0) c.n_embd_per_layer = optional(f, ple, 0, 4096);
  const std::string shared = a + "attention.shared_kv_layers";
  c.n_kv_shared = f.has(shared) ? int(std::min<uint64_t>(f.get_u64(shared), 1u << 20)) : 0;
  if (c.n_kv_shared >= c.n_layer)
    fail(f, shared + " = " + std::to_string(c.n_kv_shared) + ", expected fewer than block_count " +
                std::to_string(c.n_layer));
  check_shared_layers(f, c);
  for (const char* k : {"attention.key_length_swa", "attention.value_length_swa"}) {
    const int swa = optional(f, a + k, c.head_dim, 1u << 16);
    if (swa != c.head_dim)
      fail(f, "gemma4: per-layer head sizes are not supported yet (" + a + k + " = " +
                  std::to_string(swa) + ", key_length = " + std::to_string(c.head_dim) + ")");
  }
  const int rope_swa = optional(f, a + "rope.dimension_count_swa", c.rope_dim, 1u << 16);
  if (rope_swa != c.rope_dim)
    fail(f, "gemma4: " + a + "rope.dimension_count_swa = " + std::to_string(rope_swa) +
                " differs from rope.dimension_count = " + std::to_string(c.rope_dim) +
                " (not supported yet)");
}

}  // namespace kvforge::config_detail
