#include "model/gated_delta_net.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "core/ops/gated_delta.h"
#include "model/linear_attention_tp.h"

namespace kvforge {

void GatedDeltaNetScratch::reserve(const ModelConfig& c, int max_tokens) {
  const LinearAttentionConfig& l = c.linear;
  const size_t n = size_t(max_tokens);
  if (!c.hybrid() || qkv.size() >= n * size_t(l.conv_channels())) return;
  qkv.resize(n * size_t(l.conv_channels()));
  conv.resize(n * size_t(l.conv_channels()));
  z.resize(n * size_t(l.value_dim()));
  beta.resize(n * size_t(l.n_v_heads));
  decay.resize(n * size_t(l.n_v_heads));
  if (l.grouped_heads) beta_alpha.resize(n * 2 * size_t(l.n_v_heads));
  out.resize(n * size_t(l.value_dim()));
  order.resize(n);
  seq_begin.reserve(n + 1);
  cursor.reserve(n);
  states.reserve(n);
}

namespace {

// s.order / s.seq_begin: the step's tokens grouped by sequence (a counting
// sort, stable, so each sequence's tokens stay in step order); s.states: each
// sequence's state, zeroed at a restart from position 0. Checks that each
// sequence's tokens continue its state one position at a time.
void bind_states(int layer, const LinearAttentionStep& step, KvStore& kv, const ModelConfig& c,
                 GatedDeltaNetScratch& s) {
  const size_t n_seqs = step.seqs.size();
  s.seq_begin.assign(n_seqs + 1, 0);
  for (int64_t t = 0; t < step.n_tokens; ++t)
    ++s.seq_begin[size_t(step.token_seq_slot[size_t(t)]) + 1];
  for (size_t i = 0; i < n_seqs; ++i) s.seq_begin[i + 1] += s.seq_begin[i];
  s.cursor.assign(s.seq_begin.begin(), s.seq_begin.end() - 1);
  for (int64_t t = 0; t < step.n_tokens; ++t)
    s.order[size_t(s.cursor[size_t(step.token_seq_slot[size_t(t)])]++)] = int32_t(t);
  s.states.clear();
  for (size_t i = 0; i < n_seqs; ++i) {
    RecurrentState st = kv.recurrent_state(layer, step.seqs[i]);
    int32_t expect = step.positions[size_t(s.order[size_t(s.seq_begin[i])])];
    if (expect == 0) {
      std::fill_n(st.conv, c.linear.conv_floats(), 0.0f);
      std::fill_n(st.matrix, c.linear.matrix_floats(), 0.0f);
      *st.n_past = 0;
    }
    for (int32_t j = s.seq_begin[i]; j < s.seq_begin[i + 1]; ++j, ++expect)
      if (step.positions[size_t(s.order[size_t(j)])] != expect ||
          (j == s.seq_begin[i] && expect != *st.n_past))
        throw std::logic_error(
            "layer " + std::to_string(layer) + ": sequence " + std::to_string(step.seqs[i]) +
            " continues at position " + std::to_string(step.positions[size_t(s.order[size_t(j)])]) +
            " but its recurrent state holds " + std::to_string(*st.n_past) +
            " positions (a linear-attention layer needs each position once, in order)");
    s.states.push_back(st);
  }
}

// β = sigmoid(β), decay = a · softplus(alpha + dt_bias), q and k l2-normed, per token.
void token_gates(const ModelConfig& c, const LinearAttentionWeights& w, int64_t t,
                 GatedDeltaNetScratch& s) {
  const LinearAttentionConfig& l = c.linear;
  float* beta = s.beta.data() + t * l.n_v_heads;
  float* decay = s.decay.data() + t * l.n_v_heads;
  for (int h = 0; h < l.n_v_heads; ++h) {
    beta[h] = 1.0f / (1.0f + std::exp(-beta[h]));
    decay[h] = softplus(decay[h] + w.dt_bias[size_t(h)]) * w.a[size_t(h)];
  }
}

// The conv1d of each sequence's tokens in order (one sequence per work item),
// then its tokens' gates and q/k norms.
void convolve(const ModelConfig& c, const LinearAttentionWeights& w,
              const LinearAttentionStep& step, GatedDeltaNetScratch& s, ThreadPool& pool) {
  const LinearAttentionConfig& l = c.linear;
  const int64_t ch = l.conv_channels();
  pool.parallel_for(step.seqs.size(), [&](size_t i0, size_t i1) {
    for (size_t i = i0; i < i1; ++i)
      for (int32_t j = s.seq_begin[i]; j < s.seq_begin[i + 1]; ++j) {
        const int64_t t = s.order[size_t(j)];
        float* out = s.conv.data() + t * ch;
        causal_conv1d_silu_token(s.qkv.data() + t * ch, w.conv.data(), ch, l.conv_kernel,
                                 s.states[i].conv, out);
        for (int h = 0; h < 2 * l.n_k_heads; ++h)  // q heads then k heads
          l2_norm(out + int64_t(h) * l.head_dim, l.head_dim, c.rms_eps);
        token_gates(c, w, t, s);
        const RecurrentState& st = s.states[i];
        if (st.snap_conv && step.positions[size_t(t)] + 1 == st.snapshot_at)
          std::copy_n(st.conv, l.conv_floats(), st.snap_conv);
      }
  });
}

// The delta rule of every (sequence, value head) over the sequence's tokens
// in order, then the gated norm of each output head.
void recur(const ModelConfig& c, const LinearAttentionWeights& w, const LinearAttentionStep& step,
           GatedDeltaNetScratch& s, ThreadPool& pool) {
  const LinearAttentionConfig& l = c.linear;
  const int64_t ch = l.conv_channels(), d = l.head_dim, vd = l.value_dim();
  const size_t items = step.seqs.size() * size_t(l.n_v_heads);
  pool.parallel_for(items, [&](size_t b, size_t e) {
    for (size_t item = b; item < e; ++item) {
      const size_t i = item / size_t(l.n_v_heads);
      const int h = int(item % size_t(l.n_v_heads));
      const int hk = l.key_head(h);
      float* state = s.states[i].matrix + int64_t(h) * d * d;
      for (int32_t j = s.seq_begin[i]; j < s.seq_begin[i + 1]; ++j) {
        const int64_t t = s.order[size_t(j)];
        const float* row = s.conv.data() + t * ch;
        const float* q = row + hk * d;
        const float* k = row + l.key_dim() + hk * d;
        const float* v = row + 2 * l.key_dim() + h * d;
        float* o = s.out.data() + t * vd + h * d;
        gated_delta_rule_token(state, q, k, v, s.decay[size_t(t * l.n_v_heads + h)],
                               s.beta[size_t(t * l.n_v_heads + h)], int(d), o);
        gated_rms_norm(o, w.norm.data(), s.z.data() + t * vd + h * d, d, c.rms_eps, o);
        const RecurrentState& st = s.states[i];
        if (st.snap_matrix && step.positions[size_t(t)] + 1 == st.snapshot_at)
          std::copy_n(state, d * d, st.snap_matrix + int64_t(h) * d * d);
      }
    }
  });
}

// Grouped heads (qwen3next): ssm_ba's [n_tokens][2 n_v_heads] rows into
// beta and alpha [n_tokens][n_v_heads]; key head g holds the betas then the
// alphas of value heads g·r .. g·r + r - 1.
void split_beta_alpha(const LinearAttentionConfig& l, int64_t n, GatedDeltaNetScratch& s) {
  const int r = l.heads_per_key();
  for (int64_t t = 0; t < n; ++t) {
    const float* ba = s.beta_alpha.data() + t * 2 * l.n_v_heads;
    for (int h = 0; h < l.n_v_heads; ++h) {
      const int64_t at = int64_t(h / r) * 2 * r + h % r;
      s.beta[size_t(t * l.n_v_heads + h)] = ba[at];
      s.decay[size_t(t * l.n_v_heads + h)] = ba[at + r];
    }
  }
}

}  // namespace

void gated_delta_net_block(const ModelConfig& c, const LinearAttentionWeights& w, int layer,
                           const LinearAttentionStep& step, KvStore& kv, GatedDeltaNetScratch& s,
                           ThreadPool& pool, MatmulScratch& ms, float* proj, const TpRanks* ranks) {
  const int64_t n = step.n_tokens;
  if (!ranks && w.out.rows != c.n_embd)
    throw std::logic_error("gated_delta_net_block: a rank's share of the heads needs its TpRanks");
  bind_states(layer, step, kv, c, s);
  if (c.linear.grouped_heads) {
    const MatmulOutput in[] = {
        {w.qkv, s.qkv.data()}, {w.gate, s.z.data()}, {w.beta_alpha, s.beta_alpha.data()}};
    matmul_batch(in, step.xn, n, pool, ms);
    split_beta_alpha(c.linear, n, s);
  } else {
    const MatmulOutput in[] = {{w.qkv, s.qkv.data()},
                               {w.gate, s.z.data()},
                               {w.beta, s.beta.data()},
                               {w.alpha, s.decay.data()}};
    matmul_batch(in, step.xn, n, pool, ms);
  }
  convolve(c, w, step, s, pool);
  recur(c, w, step, s, pool);
  for (size_t i = 0; i < step.seqs.size(); ++i)
    *s.states[i].n_past += s.seq_begin[i + 1] - s.seq_begin[i];
  if (ranks) return linear_output_tp(c, w, *ranks, s.out.data(), n, s, pool, ms, proj);
  matmul(w.out, s.out.data(), n, proj, pool, ms);
}

size_t gated_delta_net_scratch_bytes(const ModelConfig& c, const LinearAttentionWeights& w,
                                     int64_t n_tokens) {
  const MatmulOutput grouped[] = {{w.qkv}, {w.gate}, {w.beta_alpha}};
  const MatmulOutput tiled[] = {{w.qkv}, {w.gate}, {w.beta}, {w.alpha}};
  const size_t in = c.linear.grouped_heads ? matmul_batch_scratch_bytes(grouped, n_tokens)
                                           : matmul_batch_scratch_bytes(tiled, n_tokens);
  return std::max(in, matmul_scratch_bytes(w.out, n_tokens));
}

}  // namespace kvforge
