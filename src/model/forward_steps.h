// The elementary steps of the forward pass over explicit row buffers, which
// the block steps (model/block_steps.h) that the paged forward pass and the
// static plan executor both run are made of, so that each architecture
// feature is written once: the embedding scale, Q/K norms and RoPE tables,
// the gated activation (SwiGLU or GeGLU), the logits' soft-cap, the keys a
// sliding window lets a query see, and the tensor-parallel gathers.
//
// Rows are tokens: x [rows][n_embd], q [rows][q_dim], k [rows][kv_dim],
// gate/up [rows][n_ff], logits [rows][n_vocab], all f32. The config is the
// model's rank_config() (this rank's heads and FFN rows).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "core/comm/communicator.h"
#include "core/kernels/column_parts.h"
#include "core/kernels/matmul.h"
#include "core/ops/attention.h"
#include "core/threadpool.h"
#include "model/model.h"

namespace kvforge {

// Where forward passes spend their wall time, summed over calls, in seconds
// (a steady_clock read at each phase boundary, cheap beside a step).
// What the three phases leave of `total` is the per-token vector work:
// embedding, norms, residual adds, RoPE, K/V writes and SwiGLU.
struct ForwardTimes {
  double weight_matmuls = 0;  // every layer's Q/K/V, output, gate/up and down projections
  double output_matmul = 0;   // the logits' matmul (with the final norm of its rows)
  double attention = 0;       // attention over the KV store (its spans included)
  double communication = 0;   // tensor-parallel exchanges between ranks (0 on one process)
  double total = 0;           // whole forward() calls
};

// Adds the wall time from its construction to its destruction to `*into`
// (nothing when into is null: the static executor does not time its steps).
class PhaseTimer {
 public:
  explicit PhaseTimer(double* into) : into_(into) {
    if (into_) start_ = std::chrono::steady_clock::now();
  }
  ~PhaseTimer() {
    if (into_)
      *into_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  double* into_;
  std::chrono::steady_clock::time_point start_;
};

// x [n_embd] = token_embd[token] * embd_scale.
void embed_token(const Model& model, int32_t token, float* x);

// y[rows][bias.size()] += bias; nothing for an empty bias.
void add_bias(float* y, const std::vector<float>& bias, int64_t rows);

// Each of the n_heads heads of one token (back to back, [n_heads][head_dim])
// RMS-normed in place by `weight` [head_dim]: the Q/K norms (qwen3, gemma3).
void norm_heads(const ModelConfig& c, float* heads, int n_heads, const std::vector<float>& weight);

// One token's q [q_dim] and k [kv_dim] rotated by the angles `cs` [rope_dim]
// of the layer's RoPE table (Model::rope_index); q only for a null k.
void rope_token(const Model& model, int layer, float* q, float* k, const float* cs);

// gate[i] = act(gate[i]) * up[i] for n values: GELU-tanh (GeGLU) when the
// model's FFN gate is GELU, gpt-oss's clamped SwiGLU for its experts, else
// SiLU (SwiGLU).
void gated_activation(const ModelConfig& c, float* gate, const float* up, int64_t n);

// logits → c·tanh(logits / c) for n values where the model caps its logits
// (final_softcap > 0); nothing otherwise.
void soft_cap_logits(const ModelConfig& c, float* logits, int64_t n);

// The positions a query at `pos` attends under `window` (0: every earlier one).
inline KeyRange attended_keys(int32_t window, int32_t pos) {
  return {window > 0 ? std::max(0, pos - window + 1) : 0, pos + 1};
}

// The channel of a one-process run (stateless, shared by every caller).
Communicator& one_process_communicator();

// Throws std::invalid_argument unless `comm` is the channel `model` was
// loaded for: its size the model's ranks and its rank the model's share.
void check_communicator(const Model& model, const Communicator& comm, const char* who);

// Tensor parallel only: what the ranks' exchanges gather into. Grows on the
// first steps of each size, then stays.
struct TpExchange {
  std::vector<float> gathered;  // [parts][rows][n_embd] products, or [ranks][rows][vocab rows]
  std::vector<int64_t> counts;  // [ranks] floats of each rank's logits block
};

// out [rows][n_embd] = W x for a row-parallel W (attn_output, ffn_down) held
// as this rank's column parts of `total_parts`: on one process
// matmul_column_parts; on several, each part's product, every rank's parts
// gathered, then added in part order on every rank (the bits of one process,
// core/kernels/column_parts.h).
void row_parallel_matmul(const TensorSplit& split, Communicator& comm, const ColumnParts& w,
                         int total_parts, const float* x, int64_t rows, float* out, TpExchange& ex,
                         ThreadPool& pool, MatmulScratch& scratch, ForwardTimes* times);

// Tensor parallel: where this rank's vocabulary rows of `rows` logit rows go
// in ex.gathered ([rank][rows][rank's vocab rows]), which is grown to hold
// every rank's and `extra` floats after them.
float* vocab_slice(const TensorSplit& split, int64_t rows, int64_t n_vocab, size_t extra,
                   TpExchange& ex);
// Tensor parallel: every rank's vocab_slice gathered and laid out as logits [rows][n_vocab].
void gather_vocab_logits(const TensorSplit& split, Communicator& comm, int64_t rows,
                         int64_t n_vocab, TpExchange& ex, float* logits, ForwardTimes* times);

}  // namespace kvforge
