// How much memory a model and its KV cache need, and the inverse questions
// (how long a context, how many sequences fit a budget). The batching engine
// and the server size their KV pool with the same functions the
// `kvforge kv-plan` command prints.
//
// What is counted: weight memory (every tensor of the model) and KV storage
// (K and V records of every layer and KV head, scales included, as the caches
// store them: core/formats/kv_format.h). Not counted: activations, scratch,
// logits, the tokenizer, the process itself — a few hundred MiB at most for
// the shapes here, so leave that much headroom in a budget.
//
// Sliding windows: the paged engine releases a windowed layer's blocks once
// no future query reads them (block_manager.h), so during decode a windowed
// layer holds at most ceil(W / B) + 1 blocks of a sequence (blocks of B =
// block_tokens positions). A sequence of n tokens is counted at n positions
// in full-attention layers and min(n, (ceil(W / B) + 1) * B) in windowed
// ones: min(n, W + B) when B divides W. Not counted: the chunk of a
// prefill in flight (up to max_batched_tokens more positions in windowed
// layers for one step) and the partial last block of full layers.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/formats/kv_format.h"
#include "core/gguf/gguf_file.h"
#include "model/model_config.h"

namespace kvforge {

struct ModelShape {
  std::string name;
  int64_t n_vocab = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_kv_head = 0;  // < n_head for grouped-query attention
  int64_t head_dim = 0;
  int64_t n_ff = 0;  // a dense FFN's rows (the widest layer's when they differ)
  // The dense FFN rows of all layers together when layers differ (Gemma 4's
  // double-wide shared-KV layers); 0: n_layer · n_ff.
  int64_t n_ff_all_layers = 0;
  int64_t n_ff_min = 0;  // the narrowest layer's dense FFN rows when layers differ (0: n_ff)
  int64_t n_ctx_train = 0;
  bool tied_output = false;  // the output projection reuses token_embd
  // Sliding-window attention: n_swa_layers of the n_layer layers attend only
  // the last `sliding_window` positions (0 / 0: every layer attends all).
  int64_t sliding_window = 0;
  int64_t n_swa_layers = 0;
  // Mixture of experts (n_expert > 0): each layer's FFN is n_expert experts
  // of n_ff_exp rows and a router, n_expert_used of them run per token (n_ff
  // then plays no part in the parameters).
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  int64_t n_ff_exp = 0;
  // Gemma 4's MoE: a dense FFN of n_ff rows beside the experts in every layer.
  bool experts_beside_ffn = false;
  // A shared expert (qwen35moe, qwen3next): n_ff_shexp rows every token runs,
  // and its gate's one row.
  int64_t n_ff_shexp = 0;
  // Hybrid models (qwen35, qwen35moe, qwen3next): n_recurrent_layers of the
  // n_layer layers keep no K/V but a fixed state of state_bytes_per_sequence
  // (all of them, f32) per sequence, counted with each sequence's KV. Their
  // matrices are the Gated DeltaNet's (`linear`: qkv, gate, beta and alpha,
  // out, and the conv taps); the full layers' attn_q also holds each head's
  // output gate (attn_gate).
  int64_t n_recurrent_layers = 0;
  uint64_t state_bytes_per_sequence = 0;
  LinearAttentionConfig linear;
  bool attn_gate = false;
  // Gemma 4: the last n_shared_kv_layers layers (n_shared_swa_layers of them
  // windowed) read an earlier layer's K/V and keep none (their Q and O
  // matrices counted, no K/V); n_swa_layers counts the windowed layers that
  // keep K/V. Its windowed layers' heads are head_dim_swa wide (0: head_dim),
  // n_kv_head_swa of them (0: n_kv_head; the 31B's and 26B-A4B's differ).
  int64_t n_shared_kv_layers = 0;
  int64_t n_shared_swa_layers = 0;
  int64_t head_dim_swa = 0;
  int64_t n_kv_head_swa = 0;
  int64_t n_kv_layers() const { return n_layer - n_recurrent_layers - n_shared_kv_layers; }

  // Parameters: token_embd, output (unless tied), per layer Q/K/V/O, gate/up/down
  // and the two norm vectors, and the final norm.
  int64_t n_params() const;
  // The same split: matrices and norm vectors.
  int64_t n_matrix_params() const;
  int64_t n_norm_params() const { return (2 * n_layer + 1) * n_embd; }
  // The parameters one token reads: all but the experts it is not routed to.
  int64_t n_active_params() const;

  // Named shapes of published models: llama-7b, llama-2-7b, llama-2-13b,
  // llama-2-70b, llama-3-8b, llama-3-70b, tinyllama-1.1b, llama-3.1-8b,
  // qwen3-8b, gemma-2-2b, gemma-3-4b, phi-3-mini, qwen3-30b-a3b, gpt-oss-20b (its
  // bias vectors and sinks are not counted: vectors, not matrices),
  // qwen3-next-80b-a3b, qwen3.5-35b-a3b (hybrids with a shared expert), gemma-4-e2b (20 of
  // 35 layers on shared K/V; parameters counted with the full layers' head size for all
  // layers and without the per-layer embeddings: K/V exact, weights approximate; its 20
  // shared-KV layers' FFNs double wide, as use_double_wide_mlp makes them). nullopt
  // for unknown names
  // (the CLI resolves its random-model presets to a shape itself). (Gemma's four norm
  // vectors per layer count as two: too few parameters to matter.)
  static std::optional<ModelShape> preset(const std::string& name);
  static std::vector<std::string> preset_names();
  static ModelShape from_config(const ModelConfig& config);
};

// Weight bytes when matrices are stored as `matrix_type` and norm vectors as
// f32 (as GGUF files store them). n_embd and n_ff must suit the type's block size.
uint64_t weight_bytes(const ModelShape& shape, GgmlType matrix_type);
// The exact bytes of every tensor of a GGUF file, and its shape.
struct GgufWeights {
  ModelShape shape;
  uint64_t bytes = 0;
};
GgufWeights read_gguf_weights(const std::filesystem::path& path);
GgufWeights gguf_weights(const gguf::GgufFile& file);

// K and V of one token, all layers and KV heads, scales included.
uint64_t kv_bytes_per_token(const ModelShape& shape, KvFormat format);
// The same shape with every shared-KV layer keeping K/V of its own (Gemma 4
// without sharing), for comparing.
ModelShape without_kv_sharing(ModelShape shape);
// K and V of one sequence of n_ctx tokens as the paged engine keeps it
// (windowed layers at min(n_ctx, kv_window_positions) positions, see above),
// plus its recurrent state (hybrid models).
int64_t kv_window_positions(const ModelShape& shape, int64_t block_tokens);
uint64_t kv_bytes_per_sequence(const ModelShape& shape, KvFormat format, int64_t n_ctx,
                               int64_t block_tokens = 16);

struct KvMemoryPlan {
  uint64_t weight_bytes = 0;
  uint64_t kv_per_token = 0;
  uint64_t kv_per_sequence = 0;  // kv_bytes_per_sequence (= kv_per_token · n_ctx without windows)
  uint64_t kv_per_sequence_full = 0;  // kv_per_token · n_ctx: every layer keeping every position
  uint64_t kv_total = 0;              // kv_per_sequence · batch
  uint64_t total = 0;                 // weights + kv_total
};
KvMemoryPlan plan_kv_memory(const ModelShape& shape, KvFormat format, uint64_t weight_bytes,
                            int64_t n_ctx, int64_t batch, int64_t block_tokens = 16);

// Longest context (tokens per sequence) for `batch` sequences within
// `budget_bytes` of weights + KV; 0 when not even one token fits. With
// windowed layers the answer is capped at kMaxPlannedContext (when every
// layer is windowed a sequence's KV stops growing).
int64_t max_context_for(const ModelShape& shape, KvFormat format, uint64_t weight_bytes,
                        int64_t batch, uint64_t budget_bytes, int64_t block_tokens = 16);
inline constexpr int64_t kMaxPlannedContext = int64_t(1) << 31;
// Most sequences of n_ctx tokens within `budget_bytes` of weights + KV.
int64_t max_sequences_for(const ModelShape& shape, KvFormat format, uint64_t weight_bytes,
                          int64_t n_ctx, uint64_t budget_bytes, int64_t block_tokens = 16);
// Layers per paged-engine block (kv_layer_groups.h): n_layer without
// windows or when every layer is windowed, else the smaller of the full and
// windowed layer counts.
int64_t kv_block_slots(const ModelShape& shape);
// One paged-engine block of `block_tokens` tokens (PagedKvCache::block_bytes):
// as wide as its widest layer group (kv_layer_groups.h).
uint64_t kv_block_bytes(const ModelShape& shape, KvFormat format, int64_t block_tokens);
// KV pool sizing for the batching engine: whole blocks of `block_tokens` tokens
// (kv_block_bytes each) that fit in `kv_budget_bytes` (the budget for KV alone).
int64_t kv_pool_blocks(const ModelShape& shape, KvFormat format, uint64_t kv_budget_bytes,
                       int64_t block_tokens);

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace kvforge
