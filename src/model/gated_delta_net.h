// Qwen 3.5's and Qwen3-Next's Gated DeltaNet layer (linear attention with a
// per-sequence recurrent state), as llama.cpp's qwen35 and qwen3next graphs compute it:
//
//   qkv = attn_qkv · xn    [conv_channels] = q [n_k_heads][d] | k [n_k_heads][d] | v [n_v_heads][d]
//   z = attn_gate · xn     [n_v_heads][d] the output norm's gate
//   β = sigmoid(ssm_beta · xn), g = ssm_a · softplus(ssm_alpha · xn + ssm_dt.bias)   [n_v_heads]
//   c = silu(causal_conv1d(qkv))  over the sequence's last conv_kernel inputs (the conv window)
//   q, k l2-normed per head; value head h reads key head h % n_k_heads (qwen35: llama.cpp's
//   converter orders the value heads so) or h / (n_v_heads / n_k_heads) (qwen3next)
//   o_h = delta rule (core/ops/gated_delta.h) over the head's state matrix
//   proj = ssm_out · (rms_norm(o_h) · ssm_norm · silu(z_h))
//
// Decode and prefill both run the recurrence token by token, so a token's
// result does not depend on how the sequence's prompt was chunked or batched.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/huge_page_buffer.h"
#include "core/kernels/matmul.h"
#include "core/threadpool.h"
#include "model/kv_store.h"
#include "model/model_config.h"

namespace kvforge {

// A linear-attention layer's weights (shapes from ModelConfig::linear; d = head_dim).
struct LinearAttentionWeights {
  WeightView qkv;    // attn_qkv [conv_channels rows][n_embd]
  WeightView gate;   // attn_gate [n_v_heads * d rows][n_embd]
  WeightView beta;   // ssm_beta [n_v_heads rows][n_embd] (tiled heads)
  WeightView alpha;  // ssm_alpha [n_v_heads rows][n_embd] (tiled heads)
  // ssm_ba [2 n_v_heads rows][n_embd] (grouped heads, LinearAttentionConfig): per key
  // head, its value heads' beta rows then their alpha rows
  WeightView beta_alpha;
  std::vector<float> conv;     // ssm_conv1d [conv_channels][conv_kernel]
  std::vector<float> dt_bias;  // ssm_dt.bias [n_v_heads]
  std::vector<float> a;        // ssm_a [n_v_heads] = -exp(A_log)
  std::vector<float> norm;     // ssm_norm [d]
  WeightView out;              // ssm_out [n_embd rows][n_v_heads * d]
  // Tensor parallel: this rank's rows of the matrices above, copied out of
  // the file (model/linear_attention_tp.h); empty on one process.
  HugePageBuffer rank_rows;
};

// Activation buffers, sized by reserve().
struct GatedDeltaNetScratch {
  std::vector<float> qkv;              // [n_tokens][conv_channels] projections
  std::vector<float> conv;             // [n_tokens][conv_channels] conv1d + SiLU
  std::vector<float> z;                // [n_tokens][value_dim]
  std::vector<float> beta;             // [n_tokens][n_v_heads] then sigmoid
  std::vector<float> decay;            // [n_tokens][n_v_heads] alpha, then g (log decay)
  std::vector<float> beta_alpha;       // [n_tokens][2 n_v_heads] ssm_ba's rows (grouped heads)
  std::vector<float> out;              // [n_tokens][value_dim] heads' outputs, then gated-normed
  std::vector<int32_t> order;          // [n_tokens] token indices grouped by sequence, in order
  std::vector<int32_t> seq_begin;      // [n_seqs + 1] each sequence's range in `order`
  std::vector<int32_t> cursor;         // [n_seqs] where the sort puts each sequence's next token
  std::vector<RecurrentState> states;  // [n_seqs] this layer's state of each sequence
  // Tensor parallel only (model/linear_attention_tp.h), grown on first use:
  std::vector<float> heads_all;  // [n_tokens][whole value_dim] every rank's head outputs
  std::vector<float> proj_rows;  // [n_tokens][n_embd / n] this rank's ssm_out rows
  void reserve(const ModelConfig& c, int max_tokens);
};

// What one step gives the layer: xn [n_tokens][n_embd] (normed input), each
// token's position and its index into the step's distinct sequences `seqs`.
struct LinearAttentionStep {
  const float* xn;
  int64_t n_tokens;
  std::span<const int32_t> positions;
  std::span<const int32_t> token_seq_slot;
  std::span<const int32_t> seqs;
};

struct TpRanks;

// proj [n_tokens][n_embd] = the layer's output; advances each sequence's state
// in `kv` by its tokens. Throws std::logic_error when a sequence's tokens do
// not continue its state (position ≠ the state's n_past, and not a restart at 0).
// c: this rank's config; ranks: nullptr on one process, else this rank's share
// and channel (model/linear_attention_tp.h).
void gated_delta_net_block(const ModelConfig& c, const LinearAttentionWeights& w, int layer,
                           const LinearAttentionStep& step, KvStore& kv, GatedDeltaNetScratch& s,
                           ThreadPool& pool, MatmulScratch& ms, float* proj,
                           const TpRanks* ranks = nullptr);

// Bytes of MatmulScratch::activations gated_delta_net_block needs over
// n_tokens tokens (for reserving up front: the static plans).
size_t gated_delta_net_scratch_bytes(const ModelConfig& c, const LinearAttentionWeights& w,
                                     int64_t n_tokens);

}  // namespace kvforge
