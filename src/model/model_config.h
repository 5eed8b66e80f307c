// Hyperparameters of a LLaMA-family model, read from GGUF metadata
// (`<arch>.*` keys, arch = general.architecture) the way llama.cpp reads
// them. Every `<arch>.*` key is either understood here or refused
// (model_keys.cpp): a key that changes the math is never skipped silently.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/gguf/gguf_file.h"
#include "core/ops/rope.h"
#include "model/moe_config.h"

namespace kvforge {

enum class Architecture {
  Llama,
  Qwen2,
  Qwen3,
  Gemma2,
  Gemma3,
  Phi3,
  Qwen3Moe,
  Qwen35,
  Qwen35Moe,
  Qwen3Next,
  GptOss,
  Gemma4
};

// How RoPE pairs up the dimensions of a head.
//  AdjacentPairs: (x[2i], x[2i+1]) — GGUF llama files (converters permute Q/K
//                 weights so that this equals the original rotate-half layout).
//  Neox:          (x[i], x[i + rope_dim/2]) — qwen, gemma, phi3.
enum class RopeStyle { AdjacentPairs, Neox };

// rope.scaling.type. LongRope's per-frequency factors are tensors
// (rope_factors_long/short); so are Llama 3's (rope_freqs, with type None or
// Linear in the file).
enum class RopeScaling { None, Linear, Yarn, LongRope };

// The gate's activation in the gated FFN: down(act(gate(x)) * up(x)).
// SwigluOai (gpt-oss's experts, core/ops/activation.h): the gate clamped
// above and up clamped both ways at 7, then gate·sigmoid(1.702 gate)·(up + 1).
enum class FfnActivation { Silu, GeluTanh, SwigluOai };

// Qwen 3.5's and Qwen3-Next's Gated DeltaNet (linear attention) layers: the
// `<arch>.ssm.*` keys as llama.cpp reads them (model_hybrid_config.cpp). Zero
// when the model has none.
struct LinearAttentionConfig {
  int conv_kernel = 0;  // ssm.conv_kernel: taps of the causal conv1d over q|k|v
  int n_k_heads = 0;    // ssm.group_count: query/key heads
  int n_v_heads = 0;    // ssm.time_step_rank: value heads (a multiple of n_k_heads)
  int head_dim = 0;     // ssm.state_size: the key and the value head dimension
  // How value heads share key heads. Tiled (qwen35, qwen35moe: the converter
  // reorders them): value head h reads key head h % n_k_heads, and beta and
  // alpha are two matrices (ssm_beta, ssm_alpha). Grouped (qwen3next): the
  // n_v/n_k value heads of key head g are g·r .. g·r + r - 1, and one matrix
  // ssm_ba holds, per key head, its r betas then its r alphas.
  bool grouped_heads = false;

  int heads_per_key() const { return n_v_heads / n_k_heads; }
  int key_head(int v_head) const {
    return grouped_heads ? v_head / heads_per_key() : v_head % n_k_heads;
  }

  int key_dim() const { return n_k_heads * head_dim; }
  int value_dim() const { return n_v_heads * head_dim; }
  int conv_channels() const { return 2 * key_dim() + value_dim(); }  // q | k | v
  // One sequence's state in one layer: the conv window [conv_channels][conv_kernel - 1]
  // (the last inputs, oldest first) and the delta-rule matrices [n_v_heads][head_dim][head_dim].
  size_t conv_floats() const { return size_t(conv_channels()) * size_t(conv_kernel - 1); }
  size_t matrix_floats() const { return size_t(n_v_heads) * size_t(head_dim) * size_t(head_dim); }
  size_t state_floats() const { return conv_floats() + matrix_floats(); }
};

struct ModelConfig {
  Architecture arch = Architecture::Llama;
  std::string arch_name = "llama";
  std::string name;  // general.name, if any
  int n_vocab = 0;
  int n_embd = 0;
  int n_layer = 0;
  int n_ff = 0;  // FFN rows: of every layer, or of the widest when n_ff_layers is set
  int n_head = 0;
  int n_kv_head = 0;
  int head_dim = 0;  // n_embd / n_head unless <arch>.attention.key_length says otherwise
  int rope_dim = 0;  // dimensions rotated per head (<= head_dim)
  float rms_eps = 1e-5f;
  int n_ctx_train = 0;
  RopeStyle rope_style = RopeStyle::AdjacentPairs;
  RopeScaling rope_scaling = RopeScaling::None;
  RopeConfig rope;           // full-attention layers (all layers without sliding windows)
  RopeConfig rope_swa;       // sliding-window layers (gemma: their own base, no scaling)
  bool qkv_bias = false;     // qwen2: Q/K/V projections have biases
  bool tied_output = false;  // output projection reuses token_embd (no output.weight)
  bool qk_norm = false;      // qwen3, gemma3: per-head RMS norm of Q and K before RoPE
  bool post_norms = false;   // gemma2/3: RMS norm of the attention and FFN outputs
  // gpt-oss: a learned logit per query head (attn_sinks) in each softmax's
  // denominator, and a bias on the attention output projection.
  bool attn_sinks = false;
  bool attn_output_bias = false;
  float embd_scale = 1.0f;  // token embeddings are multiplied by it (gemma: sqrt(n_embd))
  float attn_scale = 0.0f;  // query scale (1/sqrt(head_dim) unless the architecture says otherwise)
  float attn_softcap = 0.0f;   // scores → c·tanh(scores/c); 0 = none (gemma2: 50)
  float final_softcap = 0.0f;  // logits → c·tanh(logits/c); 0 = none (gemma2: 30)
  FfnActivation ffn_act = FfnActivation::Silu;
  // Sliding-window attention: a query at position p of a layer with window W
  // attends positions (p - W, p]. 0 = every layer attends all earlier positions.
  int32_t sliding_window = 0;
  std::vector<uint8_t> swa_layers;  // [n_layer] 1 = the layer has the sliding window
  MoeConfig moe;                    // mixture-of-experts FFN (n_expert 0: dense)
  // Hybrid models (qwen35): which layers are Gated DeltaNet layers with a
  // per-sequence recurrent state instead of KV; the others are full attention
  // whose attn_q rows hold each head's query then its output gate.
  LinearAttentionConfig linear;
  std::vector<uint8_t> recurrent_layers;  // [n_layer] 1 = linear attention; empty: none
  bool attn_gate = false;                 // attention output *= sigmoid(gate) per head
  // nextn_predict_layers: multi-token-prediction blocks stored after the
  // n_layer blocks, which the main pass never runs (not counted in n_layer).
  int n_layer_mtp = 0;
  // Gemma 4 (model_gemma4_config.cpp): per-layer token embeddings of
  // n_embd_per_layer values per layer (0 = none), the last n_kv_shared layers
  // reading an earlier layer's K/V (kv_source) and storing none, and V
  // RMS-normed per head without a weight.
  int n_embd_per_layer = 0;
  int n_kv_shared = 0;
  bool v_norm = false;
  // Sliding-window layers' own head size and rotated dimensions (Gemma 4:
  // attention.key_length_swa, rope.dimension_count_swa); 0 = as full layers.
  int head_dim_swa = 0;
  int rope_dim_swa = 0;
  // Sliding-window layers' own KV-head count (Gemma 4 31B / 26B-A4B:
  // attention.head_count_kv as a per-layer array, one value per kind of
  // layer); 0 = as full layers.
  int n_kv_head_swa = 0;

  // FFN rows of each layer when they differ between layers (Gemma 4's
  // use_double_wide_mlp: the shared-KV layers twice as wide); empty when
  // every layer has n_ff. Scratch sized by n_ff fits every layer.
  std::vector<int> n_ff_layers;
  int layer_n_ff(int layer) const {
    return n_ff_layers.empty() ? n_ff : n_ff_layers[size_t(layer)];
  }

  int q_dim() const { return n_head * head_dim; }
  int kv_dim() const { return n_kv_head * head_dim; }
  // Per-layer shapes: q_dim()/kv_dim()/head_dim/rope_dim hold for full
  // layers; a sliding-window layer may have its own (head_dim_swa).
  int layer_head_dim(int layer) const {
    return window(layer) && head_dim_swa > 0 ? head_dim_swa : head_dim;
  }
  int layer_rope_dim(int layer) const {
    return window(layer) && rope_dim_swa > 0 ? rope_dim_swa : rope_dim;
  }
  int layer_n_kv_head(int layer) const {
    return window(layer) && n_kv_head_swa > 0 ? n_kv_head_swa : n_kv_head;
  }
  int layer_kv_dim(int layer) const { return layer_n_kv_head(layer) * layer_head_dim(layer); }
  // Some layer's head size, rotated dimensions or KV-head count differ from the full layers'.
  bool per_layer_heads() const {
    return (head_dim_swa > 0 && head_dim_swa != head_dim) ||
           (rope_dim_swa > 0 && rope_dim_swa != rope_dim) ||
           (n_kv_head_swa > 0 && n_kv_head_swa != n_kv_head);
  }
  int max_head_dim() const { return std::max(head_dim, head_dim_swa); }
  int max_rope_dim() const { return std::max(rope_dim, rope_dim_swa); }
  int max_n_kv_head() const { return std::max(n_kv_head, n_kv_head_swa); }
  int max_q_dim() const { return n_head * max_head_dim(); }
  // The widest layer's K (or V) values per token: the windowed kind's
  // count and head size, or the full kind's.
  int max_kv_dim() const {
    return std::max(kv_dim(), (n_kv_head_swa > 0 ? n_kv_head_swa : n_kv_head) *
                                  (head_dim_swa > 0 ? head_dim_swa : head_dim));
  }
  // This config as `layer` sees it: head_dim, rope_dim, n_kv_head and
  // n_ff are the layer's.
  ModelConfig layer_shape(int layer) const {
    ModelConfig s = *this;
    s.head_dim = layer_head_dim(layer);
    s.rope_dim = layer_rope_dim(layer);
    s.n_ff = layer_n_ff(layer);
    s.n_kv_head = layer_n_kv_head(layer);
    return s;
  }
  int gqa_group() const { return n_head / n_kv_head; }  // query heads per KV head (full layers)
  // The largest group of any layer (the fewest KV heads).
  int max_gqa_group() const {
    return n_head / (n_kv_head_swa > 0 ? std::min(n_kv_head, n_kv_head_swa) : n_kv_head);
  }
  // The window of `layer`'s attention; 0 = full attention.
  int32_t window(int layer) const {
    return sliding_window > 0 && swa_layers[size_t(layer)] ? sliding_window : 0;
  }
  bool hybrid() const { return !recurrent_layers.empty(); }
  // Gemma 4's MoE variant: experts beside a dense FFN, both on every layer
  // (model/gemma4_moe.h); other mixtures have no dense FFN.
  bool experts_beside_ffn() const { return arch == Architecture::Gemma4 && moe.n_expert > 0; }
  bool recurrent(int layer) const { return hybrid() && recurrent_layers[size_t(layer)]; }
  // Recurrent-state bytes of one sequence (f32, every linear-attention layer).
  size_t state_bytes_per_sequence() const;
  const RopeConfig& layer_rope(int layer) const { return window(layer) ? rope_swa : rope; }
  // The layer whose K/V `layer` attends over: itself, or for Gemma 4's
  // shared tail the last layer keeping K/V of the same kind (llama.cpp's
  // rule: the last one for full layers, the one before it for windowed).
  int kv_source(int layer) const {
    const int first_shared = n_layer - n_kv_shared;
    return layer < first_shared ? layer : first_shared - (window(layer) ? 2 : 1);
  }
  // The layer stores K/V (not recurrent, not reading another layer's).
  bool owns_kv(int layer) const { return !recurrent(layer) && kv_source(layer) == layer; }
  // Layers that keep K/V: all but a hybrid model's recurrent ones and Gemma 4's shared ones.
  int n_kv_layers() const {
    int n = n_layer - n_kv_shared;
    for (uint8_t r : recurrent_layers) n -= r;
    return n;
  }
  // 2 (K and V) * the kv_dim of each layer with K/V * bytes per element.
  size_t kv_bytes_per_token(size_t bytes_per_elem) const {
    size_t elems = 0;
    for (int l = 0; l < n_layer; ++l)
      if (owns_kv(l)) elems += size_t(layer_kv_dim(l));
    return size_t(2) * elems * bytes_per_elem;
  }

  // Reads and validates the hyperparameters; throws std::runtime_error naming
  // the file and key ("model.gguf: llama.attention.head_count_kv = 3 does not divide ...").
  static ModelConfig from_gguf(const gguf::GgufFile& file);
};

// The architectures from_gguf accepts, comma-separated, for messages.
const char* supported_architecture_names();

}  // namespace kvforge
