// Random-weight LLaMA models written as GGUF: the `tiny` shapes the tests use
// and the `small` benchmark shape. Deterministic: the same spec and seed give
// the same bytes on every machine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"

namespace kvforge {

// Tokens of the byte-fallback vocabulary a model gets without a `vocab` file:
// <unk>, <s>, </s> and the 256 byte tokens.
inline constexpr int kByteVocabTokens = 3 + 256;

struct RandomModelSpec {
  std::string name = "random";
  // llama, qwen2 (Q/K/V biases), qwen3 (Q/K norms), gemma2 (post norms,
  // tied output), gemma3 (both), phi3 (fused attn_qkv and gate|up),
  // qwen3moe (Q/K norms, experts instead of the dense FFN), gpt-oss
  // (attention biases and sinks, experts with biases, a window of 128
  // unless sliding_window says otherwise), qwen35 (Gated DeltaNet hybrid),
  // qwen35moe (its MoE variant with a shared expert), qwen3next (as
  // qwen35moe, with grouped value heads, a fused ssm_ba and no RoPE sections),
  // gemma4 (shared-KV layers, per-layer embeddings):
  // the tensors each architecture's loader expects.
  std::string arch = "llama";
  int n_embd = 64;
  int n_layer = 2;
  int n_head = 4;
  int n_kv_head = 2;
  int n_ff = 128;
  int n_ctx = 512;
  int head_dim = 0;  // 0: n_embd / n_head; else written as attention.key_length/value_length
  float rope_freq_base = 10000.0f;
  float rms_eps = 1e-5f;
  bool tied_output = false;
  bool fused_qkv = false;  // one attn_qkv matrix instead of attn_q/k/v (any architecture)
  // attention.sliding_window (0: none written) and sliding_window_pattern (0: not written).
  int sliding_window = 0;
  int swa_pattern = 0;
  float rope_freq_base_swa = 0.0f;  // gemma's rope.freq_base_swa (0: not written)
  float attn_softcap = 0.0f;        // gemma2's attn_logit_softcapping (0: not written)
  float final_softcap = 0.0f;       // gemma's final_logit_softcapping (0: not written)
  // rope.scaling.type ("": not written) with rope.scaling.factor and
  // rope.scaling.original_context_length (0: not written).
  std::string rope_scaling;
  float rope_factor = 0.0f;
  int rope_orig_ctx = 0;
  // Llama 3.1's rope_freqs.weight (factor 8, low/high frequency factors 1
  // and 4, over rope_orig_ctx or 8192 positions).
  bool llama3_rope_freqs = false;
  // Phi-3's rope_factors_long/short.weight (LongRoPE).
  bool longrope_factors = false;
  // Mixture of experts (qwen3moe, gpt-oss, qwen35moe, qwen3next, gemma4_moe): expert_count,
  // expert_used_count and expert_feed_forward_length; the router (ffn_gate_inp) stays F32, as
  // llama-quantize keeps it.
  int n_expert = 8;
  int n_expert_used = 2;
  int n_ff_exp = 32;
  // qwen35moe, qwen3next: the shared expert's rows (expert_shared_feed_forward_length).
  int n_ff_shexp = 32;
  // qwen35, qwen35moe, qwen3next (hybrid): Gated DeltaNet layers with these shapes
  // (ssm.conv_kernel, ssm.state_size, ssm.group_count, ssm.time_step_rank), every
  // full_attention_interval-th layer full gated attention rotating rope_dim
  // dimensions per head (0: head_dim / 4, as Qwen 3.5 and Qwen3-Next), and n_mtp
  // multi-token-prediction blocks after the n_layer blocks.
  int ssm_conv_kernel = 4;
  int ssm_head_dim = 16;
  int ssm_k_heads = 2;
  int ssm_v_heads = 4;
  int full_attention_interval = 4;
  int rope_dim = 0;
  int n_mtp = 0;
  // gemma4 (the gemma3 block plus V norms, no query scaling, a rope_freqs for
  // the full layers and a layer_output_scale per layer): per-layer embeddings
  // of this width (0: none) and attention.shared_kv_layers. Its window
  // pattern is written as one boolean per layer.
  int n_embd_per_layer = 16;
  int n_kv_shared = 0;
  // gemma4: the windowed layers' head size (0: head_dim), written as
  // attention.key_length_swa / value_length_swa; they rotate all of it
  // (rope.dimension_count_swa), as Gemma 4's files do.
  int head_dim_swa = 0;
  // gemma4: the windowed layers' KV-head count (0: n_kv_head); when it
  // differs, attention.head_count_kv is written per layer as llama.cpp's
  // converter writes the 31B's (windowed count, full count).
  int n_kv_head_swa = 0;
  // gemma4: the MoE variant (26B-A4B): in every layer n_expert experts
  // (n_expert_used, n_ff_exp) beside the dense FFN, with the router's input
  // scale, each expert's output scale and the two branches' norms.
  bool gemma4_moe = false;
  // gemma4: use_double_wide_mlp (Gemma 4 E2B/E4B): the n_kv_shared layers'
  // FFNs have 2 n_ff rows, feed_forward_length written as one entry per
  // layer, as llama.cpp's converter writes it.
  bool double_wide_ffn = false;
  // Vocabulary size without a `vocab` file: the kByteVocabTokens byte-fallback tokens, padded with
  // unused tokens up to n_vocab (0 = no padding). Only changes the embedding and output shapes.
  int n_vocab = 0;
  // Control tokens appended to the byte-fallback vocabulary (chat markers such
  // as gpt-oss's <|start|> ... <|call|>), before any padding.
  std::vector<std::string> control_tokens;
  GgmlType weight_type = GgmlType::F32;  // matrices; norms stay F32
  // The experts' matrices (ffn_{gate,up,down}_exps), as gpt-oss ships MXFP4
  // experts beside other types (nullopt: weight_type).
  std::optional<GgmlType> expert_type;
  uint64_t seed = 42;
  int threads = 1;  // threads quantizing while the file is written (the bytes do not depend on it)

  // Named shapes: "tiny" (64/2 layers/4 heads/2 KV heads/ff 128, 259 tokens) and "small"
  // (768/12/12/4/ff 2048, 32000 tokens: the benchmark shape, LLaMA's vocabulary size).
  // nullopt for unknown names.
  static std::optional<RandomModelSpec> preset(const std::string& name);

  // gemma4's per-layer shapes: layer l has the sliding window (the last of
  // each swa_pattern layers is full), and then its own head size
  // (`head_dim`: the full layers') and KV-head count where given.
  bool gemma4_windowed(int l) const {
    return arch == "gemma4" && (swa_pattern == 0 || l % swa_pattern < swa_pattern - 1);
  }
  int layer_head_dim(int l, int full) const {
    return gemma4_windowed(l) && head_dim_swa > 0 ? head_dim_swa : full;
  }
  int layer_n_kv_head(int l) const {
    return gemma4_windowed(l) && n_kv_head_swa > 0 ? n_kv_head_swa : n_kv_head;
  }
};

// The architectures make_random_model writes.
const char* random_model_architectures();

// Builds the model: metadata now, tensors generated when the writer writes
// (GgufWriter::add_deferred_tensor), a piece of one tensor at a time, the
// same bytes at every write. Vocabulary: the tokenizer.* keys of `vocab` when given
// (n_vocab = its token count), else a 259-token byte-fallback SentencePiece
// vocabulary (<unk>, <s>, </s>, <0x00>..<0xFF>) so any text can be tokenized.
gguf::GgufWriter make_random_model(const RandomModelSpec& spec,
                                   const gguf::GgufFile* vocab = nullptr);

}  // namespace kvforge
