// The mixture-of-experts feed-forward block (model/moe_config.h says which
// routing each architecture uses):
//
//   logits[t] = router · xn[t] (+ router bias)           [n_expert]
//   (e_j, w_j) for j < k = route(logits[t])               k = n_expert_used
//   out[t] = sum_{j < k} w_j · down_{e_j}(act(gate_{e_j} xn[t]) * up_{e_j} xn[t])
// (gpt-oss: each expert's gate, up and down products plus its biases).
// With per-expert output scales (ffn_down_exps.scale), each down_{e_j}(...) is
// multiplied by its expert's scale before its weight. Gemma 4 routes on its
// own input (router_in), not xn (model/gemma4_moe.h).
// With a shared expert (qwen35moe, qwen3next), after the routed sum:
//   out[t] += sigmoid(shared_gate_inp · xn[t]) · down_s(silu(gate_s xn[t]) * up_s xn[t])
//
// Memory traffic follows the active parameters: the step's (token, expert)
// pairs are grouped by expert, so each selected expert's slabs are read once
// per step whatever the number of its tokens, and experts nobody picked are
// not read at all. A run of consecutive experts with the same token count
// (every expert of a decode step: one token each) shares one parallel region
// per projection (matmul_batch_own_tokens), up to kMatmulBatchMaxWeights;
// where the run's experts all read the same rows (one expert, or a step of
// one token), its gate and up products share one region and one
// conversion of those rows (matmul_batch).
//
// Deterministic and batch-invariant: a token's experts and weights depend on
// its own logits only; every expert product is bitwise what matmul() gives
// for that token alone (core/kernels/matmul.h); and the k products are added
// in pick order (largest weight first, ties to the lower expert index), so a
// token's output is the same bits whatever its neighbours.
#pragma once

#include <cstdint>
#include <vector>

#include "core/kernels/matmul.h"
#include "core/threadpool.h"
#include "model/model_config.h"
#include "model/moe_weights.h"

namespace kvforge {

// One token's routing: the k experts picked ([k], in pick order) and their
// weights ([k]) from its router logits [n_expert] (model/moe_config.h).
void route_token(const MoeConfig& m, const float* logits, int32_t* experts, float* weights);

// Buffers of moe_ffn for up to `capacity` tokens; reserve() sizes them once.
struct MoeScratch {
  void reserve(const ModelConfig& c, int max_tokens);
  int capacity = 0;
  std::vector<float> logits;     // [n_tokens][n_expert] router logits
  std::vector<int32_t> experts;  // [n_tokens][k] the experts each token picked
  std::vector<float> weights;    // [n_tokens][k] their weights
  std::vector<int32_t> first;    // [n_expert + 1] each expert's first row in the grouped rows
  std::vector<int32_t> next;     // [n_expert] the next free row of each expert while grouping
  std::vector<int32_t> row_of;   // [n_tokens][k] grouped row of each (token, pick)
  std::vector<float> x;          // [n_tokens * k][n_embd] inputs, grouped by expert
  std::vector<float> gate;       // [n_tokens * k][n_ff_exp]
  std::vector<float> up;         // [n_tokens * k][n_ff_exp]
  std::vector<float> y;          // [n_tokens * k][n_embd] each pair's expert output
  // The shared expert's (MoeConfig::n_ff_shexp > 0), else empty.
  std::vector<float> shared_logit;  // [n_tokens] its gate's logit
  std::vector<float> shared_gate;   // [n_tokens][n_ff_shexp]
  std::vector<float> shared_up;     // [n_tokens][n_ff_shexp]
  std::vector<float> shared_y;      // [n_tokens][n_embd] (this rank's [n_tokens][n_embd / n])
  // Tensor parallel only (model/moe_tensor_parallel.h), grown on first use:
  std::vector<float> h;         // [n_tokens * k][n_ff_exp] every rank's columns of gate
  std::vector<float> shared_h;  // [n_tokens][n_ff_shexp] every rank's columns of shared_gate
  std::vector<float> out_rows;  // [n_tokens][n_embd / n] this rank's output rows
  // Gemma 4's expert branch (model/gemma4_moe.h), else empty:
  std::vector<float> branch_in;      // [n_tokens][n_embd] the experts' input
  std::vector<float> router_in;      // [n_tokens][n_embd] the router's input
  std::vector<float> branch_out;     // [n_tokens][n_embd] the experts' weighted sum
  std::vector<int32_t> branch_rows;  // [n_tokens] the row of x each branch row comes from
};

struct TpRanks;

// out [n_tokens][n_embd] = the MoE FFN of xn [n_tokens][n_embd]. c: this
// rank's config (rank_config: its n_ff_exp share). ranks: nullptr on one
// process, else this rank's share and channel (model/moe_tensor_parallel.h).
// router_in [n_tokens][n_embd]: what the router scores (nullptr: xn).
void moe_ffn(const ModelConfig& c, const MoeWeights& w, const float* xn, int64_t n_tokens,
             float* out, MoeScratch& s, ThreadPool& pool, MatmulScratch& ms,
             const TpRanks* ranks = nullptr, const float* router_in = nullptr);

// Bytes of MatmulScratch::activations moe_ffn needs over n_tokens tokens
// whatever their routing: every expert product converts at most the step's
// n_tokens * k grouped rows (for reserving up front: the static plans).
size_t moe_ffn_scratch_bytes(const ModelConfig& c, const MoeWeights& w, int64_t n_tokens);

}  // namespace kvforge
