#include "model/block_steps.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/ops/norm.h"
#include "model/vocab_argmax.h"

namespace kvforge {
namespace {

double* phase(const StepEnv& env, double ForwardTimes::*which) {
  return env.times ? &(env.times->*which) : nullptr;
}

// q [rows][n_head][query | gate] → q [rows][q_dim] queries, gate [rows][q_dim].
// In place and in order: each query moves to a lower or equal offset.
void split_query_gate(const ModelConfig& c, float* q, float* gate, int64_t rows) {
  const int64_t hd = c.head_dim;
  for (int64_t t = 0; t < rows; ++t)
    for (int h = 0; h < c.n_head; ++h) {
      const float* from = q + (t * c.n_head + h) * 2 * hd;
      std::memcpy(gate + (t * c.n_head + h) * hd, from + hd, hd * 4);
      std::memmove(q + (t * c.n_head + h) * hd, from, hd * 4);
    }
}

// Greedy-only rows on several ranks: every rank's slice summary, gathered,
// then the rows rebuilt from them (model/vocab_argmax.h). The summaries sit
// in tp.gathered after the space of all logits, which vocab_slice sized.
void gather_argmax(const StepEnv& env, const float* mine, int64_t rows, float* logits) {
  const ModelConfig& c = env.model.rank_config();
  const TensorSplit& s = env.model.split();
  const size_t r = size_t(s.rank), n_ranks = size_t(s.n_ranks);
  const size_t block = size_t(rows * kSliceMaxFloats);
  float* summaries = env.tp.gathered.data() + size_t(rows) * size_t(c.n_vocab);
  summarize_vocab_slice(mine, rows, s.vocab_rows[r], s.vocab_first[r], summaries + r * block);
  {
    const PhaseTimer t(phase(env, &ForwardTimes::communication));
    env.comm.all_gather(summaries, block);
  }
  rebuild_argmax_rows(summaries, int64_t(n_ranks), rows, c.n_vocab, logits);
}

void row_parallel(const StepEnv& env, const ColumnParts& w, int total_parts, const float* x,
                  int64_t rows, float* out) {
  row_parallel_matmul(env.model.split(), env.comm, w, total_parts, x, rows, out, env.tp, env.pool,
                      env.matmul, env.times);
}

}  // namespace

void embed_rows(const Model& model, std::span<const int32_t> tokens,
                std::span<const int32_t> positions, float* x, float* const* cos_sin) {
  const ModelConfig& c = model.rank_config();
  const std::vector<RopeTable>& tables = model.rope_tables();
  for (size_t t = 0; t < tokens.size(); ++t) {
    embed_token(model, tokens[t], x + t * size_t(c.n_embd));
    for (size_t r = 0; r < tables.size(); ++r)
      tables[r].angles(positions[t], cos_sin[r] + t * size_t(c.max_rope_dim()));
  }
}

void norm_rows(const StepEnv& env, const std::vector<float>& weight, const float* x, int64_t rows,
               float* xn) {
  const ModelConfig& c = env.model.rank_config();
  for_rows(env.pool, rows, [&](int64_t t) {
    rms_norm(x + t * c.n_embd, weight.data(), c.n_embd, c.rms_eps, xn + t * c.n_embd);
  });
}

void residual_then_norm(const StepEnv& env, const std::vector<float>& post_norm,
                        const std::vector<float>* next, float* proj, float* x, int64_t rows,
                        float* xn) {
  const ModelConfig& c = env.model.rank_config();
  for_rows(env.pool, rows, [&](int64_t t) {
    float* xt = x + t * c.n_embd;
    float* pt = proj + t * c.n_embd;
    if (!post_norm.empty()) rms_norm(pt, post_norm.data(), c.n_embd, c.rms_eps, pt);
    for (int i = 0; i < c.n_embd; ++i) xt[i] += pt[i];
    if (next) rms_norm(xt, next->data(), c.n_embd, c.rms_eps, xn + t * c.n_embd);
  });
}

void attention_input(const StepEnv& env, int layer, const float* xn, const float* cos_sin,
                     int64_t rows, const QkvRows& out) {
  const ModelConfig& c = env.model.layer_config(layer);
  const size_t cos_sin_stride = size_t(env.model.rank_config().max_rope_dim());  // all layers'
  const LayerWeights& w = env.model.weights().layers[size_t(layer)];
  // One parallel region for Q, K and V: the normalized input is quantized once.
  // A layer reading another layer's K/V (gemma4's shared tail) computes Q only.
  const bool own_kv = w.attn_k.data != nullptr;
  const MatmulOutput qkv[] = {{w.attn_q, out.q}, {w.attn_k, out.k}, {w.attn_v, out.v}};
  {
    const PhaseTimer t(phase(env, &ForwardTimes::weight_matmuls));
    matmul_batch(std::span(qkv, own_kv ? 3 : 1), xn, rows, env.pool, env.matmul);
  }
  if (c.attn_gate) split_query_gate(c, out.q, out.gate, rows);
  add_bias(out.q, w.bias_q, rows);
  add_bias(out.k, w.bias_k, rows);
  add_bias(out.v, w.bias_v, rows);
  for_rows(env.pool, rows, [&](int64_t t) {
    float* q = out.q + t * c.q_dim();
    float* k = out.k + t * c.kv_dim();
    if (c.qk_norm) {
      norm_heads(c, q, c.n_head, w.attn_q_norm);
      if (own_kv) norm_heads(c, k, c.n_kv_head, w.attn_k_norm);
    }
    if (!w.attn_v_norm.empty()) norm_heads(c, out.v + t * c.kv_dim(), c.n_kv_head, w.attn_v_norm);
    rope_token(env.model, layer, q, own_kv ? k : nullptr, cos_sin + t * cos_sin_stride);
  });
}

void attention_output(const StepEnv& env, int layer, float* attn, const float* gate, int64_t rows,
                      float* proj) {
  const ModelConfig& c = env.model.layer_config(layer);
  if (c.attn_gate)
    for_rows(env.pool, rows, [&](int64_t t) {
      float* a = attn + t * c.q_dim();
      const float* g = gate + t * c.q_dim();
      for (int i = 0; i < c.q_dim(); ++i) a[i] *= 1.0f / (1.0f + std::exp(-g[i]));
    });
  const LayerWeights& w = env.model.weights().layers[size_t(layer)];
  row_parallel(env, w.attn_output, env.model.split().attn_parts, attn, rows, proj);
  add_bias(proj, w.bias_o, rows);
}

void dense_ffn(const StepEnv& env, int layer, const float* xn, int64_t rows, float* gate, float* up,
               float* proj) {
  const ModelConfig& c = env.model.rank_config();
  const int ff = c.layer_n_ff(layer);  // gate and up are [rows][ff], packed by the layer's width
  const LayerWeights& w = env.model.weights().layers[size_t(layer)];
  const MatmulOutput gate_up[] = {{w.ffn_gate, gate}, {w.ffn_up, up}};
  {
    const PhaseTimer t(phase(env, &ForwardTimes::weight_matmuls));
    matmul_batch(gate_up, xn, rows, env.pool, env.matmul);
  }
  for_rows(env.pool, rows, [&](int64_t t) { gated_activation(c, gate + t * ff, up + t * ff, ff); });
  row_parallel(env, w.ffn_down, env.model.split().ffn_parts, gate, rows, proj);
}

void final_norm_rows(const StepEnv& env, const float* x, std::span<const int32_t> logit_rows,
                     float* xn) {
  const ModelConfig& c = env.model.rank_config();
  for (size_t i = 0; i < logit_rows.size(); ++i)
    rms_norm(x + int64_t(logit_rows[i]) * c.n_embd, env.model.weights().output_norm.data(),
             c.n_embd, c.rms_eps, xn + i * size_t(c.n_embd));
}

void output_logits(const StepEnv& env, const float* x, std::span<const int32_t> logit_rows,
                   float* xn, bool argmax_only, float* logits) {
  const ModelConfig& c = env.model.rank_config();
  const TensorSplit& s = env.model.split();
  const int64_t rows = int64_t(logit_rows.size());
  if (rows == 0) return;
  const PhaseTimer timer(phase(env, &ForwardTimes::output_matmul));
  const WeightView& output = env.model.weights().output;
  final_norm_rows(env, x, logit_rows, xn);
  if (s.n_ranks == 1) {
    matmul(output, xn, rows, logits, env.pool, env.matmul);
    soft_cap_logits(c, logits, rows * c.n_vocab);
    return;
  }
  // tp.gathered: [rank][rows][rank's vocab rows]; rank r's block starts at rows *
  // vocab_first[r]. Greedy-only: the slice summaries of every rank follow
  // ([rank][rows][kSliceMaxFloats]).
  const bool argmax = argmax_only && fits_vocab_argmax(c.n_vocab);
  const size_t summaries = argmax ? size_t(s.n_ranks * rows * kSliceMaxFloats) : 0;
  float* mine = vocab_slice(s, rows, c.n_vocab, summaries, env.tp);
  matmul(output, xn, rows, mine, env.pool, env.matmul);
  soft_cap_logits(c, mine, rows * s.vocab_rows[size_t(s.rank)]);
  if (argmax) return gather_argmax(env, mine, rows, logits);
  gather_vocab_logits(s, env.comm, rows, c.n_vocab, env.tp, logits, env.times);
}

size_t matmul_step_scratch_bytes(const Model& model, MatmulStep step, int layer, int64_t rows) {
  if (step == MatmulStep::OutputLogits) return matmul_scratch_bytes(model.weights().output, rows);
  const LayerWeights& w = model.weights().layers[size_t(layer)];
  const MatmulOutput qkv[] = {{w.attn_q}, {w.attn_k}, {w.attn_v}};
  const MatmulOutput gate_up[] = {{w.ffn_gate}, {w.ffn_up}};
  switch (step) {
    case MatmulStep::AttentionInput:
      return matmul_batch_scratch_bytes(std::span(qkv, w.attn_k.data ? 3 : 1), rows);
    case MatmulStep::AttentionOutput:
      return matmul_scratch_bytes(w.attn_output, rows);
    default:
      return std::max(matmul_batch_scratch_bytes(gate_up, rows),
                      matmul_scratch_bytes(w.ffn_down, rows));
  }
}

}  // namespace kvforge
