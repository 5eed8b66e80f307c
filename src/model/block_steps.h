// The coarse steps of the layer walk (model/layer_walk.h) over explicit row
// buffers, written once: the paged forward pass (model/forward.cpp) runs them
// on its scratch, and the static plan executor
// (engine/static_pipeline/plan_executor.cpp) runs each recorded op through
// them on buffers in its arena. Only writing K/V and attending stay per mode
// (block tables of the paged store; the static cache's mask and rings).
//
// Rows are tokens, all f32: x, xn, proj [rows][n_embd]; q, attn [rows][q_dim]
// ([rows][2 q_dim] q with attn_gate: query | gate per head); k, v
// [rows][kv_dim]; gate, up [rows][n_ff]; cos_sin [rows][max_rope_dim] per RoPE
// table. The config is the model's layer_config() (this rank's heads and FFN
// rows, the layer's head shape); row-parallel products and the logits are
// gathered over the ranks.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/kernels/matmul.h"
#include "core/threadpool.h"
#include "model/forward_steps.h"
#include "model/model.h"

namespace kvforge {

// What every step runs with: the model, the channel between its ranks, the
// threads, the matmul scratch and the tensor-parallel exchange buffers.
struct StepEnv {
  const Model& model;
  Communicator& comm;
  ThreadPool& pool;
  MatmulScratch& matmul;
  TpExchange& tp;
  ForwardTimes* times = nullptr;  // phases timed into it; nullptr: not timed
};

// fn(row) for every row in [0, rows), the rows split over the pool: the
// per-token vector work between matmuls (one row stays on this thread).
template <class F>
void for_rows(ThreadPool& pool, int64_t rows, F&& fn) {
  pool.parallel_for(size_t(rows), [&](size_t t0, size_t t1) {
    for (size_t t = t0; t < t1; ++t) fn(int64_t(t));
  });
}

// x = the tokens' embeddings (times embd_scale); cos_sin[r] = the RoPE
// angles of each position in table r, for every table of the model.
void embed_rows(const Model& model, std::span<const int32_t> tokens,
                std::span<const int32_t> positions, float* x, float* const* cos_sin);

// xn = rms_norm(x) * weight, row by row.
void norm_rows(const StepEnv& env, const std::vector<float>& weight, const float* x, int64_t rows,
               float* xn);

// x += post_norm(proj) (proj as it is for an empty post_norm; proj is
// normed in place), then xn = rms_norm(x) * next (no norm for nullptr), in
// one pass per row: each row's residual is still in cache for its norm.
void residual_then_norm(const StepEnv& env, const std::vector<float>& post_norm,
                        const std::vector<float>* next, float* proj, float* x, int64_t rows,
                        float* xn);

// Where attention_input puts its results. gate: [rows][q_dim] the output
// gates of attn_gate models (unused otherwise).
struct QkvRows {
  float* q = nullptr;
  float* k = nullptr;
  float* v = nullptr;
  float* gate = nullptr;
};

// q, k, v of layer `layer` from xn: one batched Q/K/V matmul, the query /
// gate split (attn_gate), biases, Q/K norms and RoPE by `cos_sin`, the
// angles of the layer's table (Model::rope_index).
void attention_input(const StepEnv& env, int layer, const float* xn, const float* cos_sin,
                     int64_t rows, const QkvRows& out);

// proj = attn_output(attn) (+ its bias, gpt-oss), attn first gated by
// sigmoid(gate) for attn_gate models (gate: attention_input's; ignored
// otherwise; attn is gated in place).
void attention_output(const StepEnv& env, int layer, float* attn, const float* gate, int64_t rows,
                      float* proj);

// proj = ffn_down(act(gate(xn)) * up(xn)) of a dense FFN: SwiGLU, or GeGLU
// for a GELU gate (gated_activation); gate and up are its scratch rows.
void dense_ffn(const StepEnv& env, int layer, const float* xn, int64_t rows, float* gate, float* up,
               float* proj);

// xn [logit_rows.size()][n_embd] = the final norm of the rows `logit_rows` of x.
void final_norm_rows(const StepEnv& env, const float* x, std::span<const int32_t> logit_rows,
                     float* xn);

// logits [logit_rows.size()][n_vocab] of the rows `logit_rows` of x: final
// norm (into xn [logit_rows.size()][n_embd]), output matrix, soft-cap; on
// several ranks each computes its vocabulary rows and they are gathered.
// With argmax_only the rows hold only what an argmax reads
// (model/vocab_argmax.h).
void output_logits(const StepEnv& env, const float* x, std::span<const int32_t> logit_rows,
                   float* xn, bool argmax_only, float* logits);

// The steps above that multiply by weights, for reserving their scratch.
enum class MatmulStep { AttentionInput, AttentionOutput, DenseFfn, OutputLogits };

// Bytes of MatmulScratch::activations the step needs over `rows` rows
// (layer: the step's; ignored for OutputLogits).
size_t matmul_step_scratch_bytes(const Model& model, MatmulStep step, int layer, int64_t rows);

}  // namespace kvforge
