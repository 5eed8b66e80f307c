// Tensor parallelism for Gated DeltaNet layers (model/gated_delta_net.h;
// model/tensor_split.h has the cut). Rank r of n holds key heads
// [r * n_k / n, (r + 1) * n_k / n) and the value heads that read them:
//   grouped (qwen3next)  value heads [r * n_v / n, ...), contiguous
//   tiled (qwen35)       value heads j * n_k + g for every j < n_v / n_k and
//                        each of its key heads g, in that order
// so that with the rank's head counts (rank_config) the layer's own code
// maps each local value head to its local key head as one process maps the
// global ones. Its rows of attn_qkv (q, k, v channels), ssm_conv1d,
// attn_gate, ssm_beta/ssm_alpha or ssm_ba, ssm_dt.bias and ssm_a are copied
// out in that order; the recurrent state of a sequence holds its heads only.
//
// ssm_out splits by output rows: the heads' gated-normed outputs are
// gathered into one process's head order (n_tokens * value_dim floats), each
// rank multiplies its n_embd / n rows of ssm_out over all columns, and the
// rows are gathered (n_tokens * n_embd floats). Every value is computed as
// one process computes it, so the logits are one process's bits.
#pragma once

#include <cstdint>

#include "model/gated_delta_net.h"
#include "model/model_config.h"
#include "model/tensor_split.h"
#include "model/tp_ranks.h"

namespace kvforge {

// Keeps this rank's heads of a linear-attention layer (the whole model's
// config `c`), copying their rows into l.rank_rows. Nothing to do on one rank.
void keep_rank_linear(LinearAttentionWeights& l, const ModelConfig& c, const TensorSplit& s);

// proj [n_tokens][n_embd] = ssm_out · (every rank's head outputs `heads`
// [n_tokens][local value_dim], gathered into the whole model's head order).
// c: this rank's config; s: scratch whose tp-only buffers grow on first use.
void linear_output_tp(const ModelConfig& c, const LinearAttentionWeights& w, const TpRanks& r,
                      const float* heads, int64_t n_tokens, GatedDeltaNetScratch& s,
                      ThreadPool& pool, MatmulScratch& ms, float* proj);

}  // namespace kvforge
