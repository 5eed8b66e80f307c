// Gemma 4's own keys, as llama.cpp's gemma4 loader reads them
// (src/models/gemma4.cpp there): per-layer token embeddings, the shared-KV
// tail, the windowed layers' head sizes, no query scaling.
#include <algorithm>
#include <string>
#include <vector>

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

// The windowed layers' head size and rotated dimensions (llama.cpp:
// n_embd_head_k_swa, n_rot_swa; absent keys mean as full layers). K and V
// keep one size per layer, as llama.cpp requires of Gemma 4.
void read_swa_head_shape(const gguf::GgufFile& f, ModelConfig& c) {
  const std::string a = c.arch_name + ".";
  const int k_swa = optional(f, a + "attention.key_length_swa", c.head_dim, 1u << 16);
  const int v_swa = optional(f, a + "attention.value_length_swa", k_swa, 1u << 16);
  if (v_swa != k_swa)
    fail(f, a + "attention.value_length_swa = " + std::to_string(v_swa) +
                " differs from key_length_swa = " + std::to_string(k_swa) + " (unsupported)");
  if (k_swa % 2 != 0) fail(f, "windowed head dimension " + std::to_string(k_swa) + " is odd");
  const int rope_swa = optional(f, a + "rope.dimension_count_swa", c.rope_dim, 1u << 16);
  if (rope_swa > k_swa || rope_swa % 2 != 0)
    fail(f, a + "rope.dimension_count_swa = " + std::to_string(rope_swa) +
                " must be even and at most key_length_swa " + std::to_string(k_swa));
  if (k_swa != c.head_dim && c.sliding_window == 0)
    fail(f, a + "attention.key_length_swa = " + std::to_string(k_swa) +
                " differs from key_length but the model has no sliding window");
  c.head_dim_swa = k_swa;
  c.rope_dim_swa = rope_swa;
}

// attention.head_count_kv as a per-layer array (llama.cpp's converter
// writes the windowed layers' num_key_value_heads and the full layers'
// num_global_key_value_heads): one count per kind of layer, each dividing
// the query heads. The full layers' count is n_kv_head, the windowed
// layers' n_kv_head_swa when it differs.
void read_kv_heads_per_kind(const gguf::GgufFile& f, ModelConfig& c) {
  const std::string key = c.arch_name + ".attention.head_count_kv";
  const gguf::Value* v = f.find(key);
  if (!v || !v->is_array()) return;  // one count for all layers: read_shapes read it
  const std::vector<int> per_layer = per_layer_widths(f, key, c.n_layer, 4096);
  int counts[2] = {0, 0};  // [full, windowed]
  int first_layer[2] = {-1, -1};
  for (int l = 0; l < c.n_layer; ++l) {
    const int n = per_layer[per_layer.size() == 1 ? 0 : size_t(l)];  // one entry: all agree
    const int kind = c.window(l) ? 1 : 0;
    if (first_layer[kind] < 0) {
      first_layer[kind] = l;
      counts[kind] = n;
    } else if (n != counts[kind]) {
      fail(f, key + ": " + (kind ? "windowed" : "full-attention") + " layers " +
                  std::to_string(first_layer[kind]) + " and " + std::to_string(l) + " have " +
                  std::to_string(counts[kind]) + " and " + std::to_string(n) +
                  " KV heads; each kind of layer must have one count");
    }
  }
  for (int kind = 0; kind < 2; ++kind)
    if (counts[kind] > 0 && c.n_head % counts[kind] != 0)
      fail(f, key + "[" + std::to_string(first_layer[kind]) +
                  "] = " + std::to_string(counts[kind]) +
                  " does not divide attention.head_count = " + std::to_string(c.n_head));
  c.n_kv_head = counts[0] > 0 ? counts[0] : counts[1];
  c.n_kv_head_swa = counts[1] > 0 && counts[1] != c.n_kv_head ? counts[1] : 0;
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
  read_swa_head_shape(f, c);
  read_kv_heads_per_kind(f, c);
}

}  // namespace kvforge::config_detail
