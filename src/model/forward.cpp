#include "model/forward.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/ops/norm.h"
#include "model/layer_walk.h"
#include "model/vocab_argmax.h"

namespace kvforge {

void ForwardScratch::reserve(int max_tokens, int n_threads) {
  const ModelConfig& c = config_;
  const size_t head_floats =
      size_t(std::max(1, n_threads)) * attention_queries_scratch_floats(c.head_dim);
  if (head_scratch_.size() < head_floats) head_scratch_.resize(head_floats);
  if (max_tokens <= capacity_) return;
  const size_t n = size_t(max_tokens);
  x_.resize(n * c.n_embd);
  xn_.resize(n * std::max(c.n_embd, c.q_dim()));
  q_.resize(n * c.q_dim() * (c.attn_gate ? 2 : 1));
  if (c.attn_gate) attn_gate_.resize(n * c.q_dim());
  gdn_.reserve(c, max_tokens);
  k_.resize(n * c.kv_dim());
  v_.resize(n * c.kv_dim());
  attn_.resize(n * c.q_dim());
  gate_.resize(n * c.n_ff);
  up_.resize(n * c.n_ff);
  proj_.resize(n * c.n_embd);
  cos_sin_.resize(2 * n * c.rope_dim);  // sliding-window layers may have their own table
  step_seqs_.reserve(n);
  seq_n_keys_.reserve(n);
  seq_first_key_.reserve(n);
  token_seq_slot_.resize(n);
  token_keys_.resize(n);
  query_runs_.reserve(n + 1);
  run_work_.reserve(n + 1);
  seq_spans_.resize(n);
  for (auto& spans : seq_spans_) spans.reserve(16);
  moe_.reserve(c, max_tokens);
  capacity_ = max_tokens;
}

namespace {

// Where each thread's own range of attention items begins (ForwardPass::
// attend). Item i is (query run i / heads, kv head i % heads) and costs the
// keys its run walks; run_work holds their prefix sums over runs. Thread k's
// range starts at the first item whose work before it reaches k / n_threads
// of the total, so a thread walks the kv heads of a sequence one after the
// other, whose records lie side by side in each block. Every run walks at
// least one key, so the work before an item grows with it and the cuts
// ascend. ThreadPool::run_stealing lets a thread done with its range take
// items from the back of the others', as a busy core can hold one up.
auto attention_cuts(const std::vector<int64_t>& run_work, int64_t heads, int n_threads) {
  const int64_t items = int64_t(run_work.size() - 1) * heads;
  const int64_t total = run_work.back() * heads;
  const auto work_before = [&run_work, heads](int64_t item) {
    const size_t r = size_t(item / heads);
    return run_work[r] * heads + (item % heads) * (run_work[r + 1] - run_work[r]);
  };
  return [=](int k) {
    int64_t lo = 0, hi = items;
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2;
      if (work_before(mid) * n_threads < total * k)
        lo = mid + 1;
      else
        hi = mid;
    }
    return size_t(lo);
  };
}

}  // namespace

// One forward call; methods are the phases of a transformer block.
class ForwardPass {
 public:
  template <class Steps>
  friend void walk_forward(const Model& model, Steps& s);

  // Query tokens sharing one attention walk over the K/V tiles (see attend()).
  static constexpr int kMaxRun = 8;

  ForwardPass(const Model& model, const StepInputs& in, KvStore& kv, ForwardScratch& s,
              ThreadPool& pool, Communicator& comm)
      : m_(model),
        c_(model.rank_config()),
        split_(model.split()),
        comm_(comm),
        in_(in),
        kv_(kv),
        s_(s),
        pool_(pool),
        n_(int64_t(in.tokens.size())) {}

  void run(float* logits) {
    const PhaseTimer whole(&s_.times_.total);
    validate();
    if (split_.n_ranks > 1) check_lockstep();
    s_.reserve(int(n_), pool_.size());
    group_sequences();
    group_query_runs();
    logits_ = logits;
    walk_forward(m_, *this);
  }

  // The steps walk_forward() calls (model/layer_walk.h).
  void norm(LayerNorm which, int l) { norm_all(layer_norm_weight(m_, which, l)); }
  void residual_then_norm(LayerNorm post, int l, LayerNorm next, int next_layer) {
    add_residual_then_norm(layer_norm_weight(m_, post, l),
                           &layer_norm_weight(m_, next, next_layer));
  }
  void residual(LayerNorm post, int l) {
    add_residual_then_norm(layer_norm_weight(m_, post, l), nullptr);
  }

  // x = the tokens' embeddings (times embd_scale); the RoPE angles of each
  // token's position in every table.
  void embed() {
    const std::vector<RopeTable>& tables = m_.rope_tables();
    for (int64_t t = 0; t < n_; ++t) {
      embed_token(m_, in_.tokens[size_t(t)], s_.x_.data() + t * c_.n_embd);
      for (size_t r = 0; r < tables.size(); ++r)
        tables[r].angles(in_.positions[size_t(t)], cos_sin(int(r), t));
    }
  }

 private:
  void validate() const {
    if (in_.positions.size() != in_.tokens.size() ||
        (!in_.seq_ids.empty() && in_.seq_ids.size() != in_.tokens.size()))
      throw std::invalid_argument("forward: tokens, positions and seq_ids differ in length");
    for (int64_t t = 0; t < n_; ++t) {
      const int32_t id = in_.tokens[size_t(t)];
      if (id < 0 || id >= c_.n_vocab)
        throw std::out_of_range("token id " + std::to_string(id) +
                                " is outside the vocabulary [0, " + std::to_string(c_.n_vocab) +
                                ")");
      if (in_.positions[size_t(t)] < 0)
        throw std::out_of_range("negative position " + std::to_string(in_.positions[size_t(t)]));
    }
    for (int32_t r : in_.logit_rows)
      if (r < 0 || r >= n_)
        throw std::out_of_range("logit row " + std::to_string(r) + " out of range");
  }

  // Every rank must run the same step: compares a digest of its inputs
  // across ranks (one 8-byte all-gather); all ranks see the same digests,
  // so all of them throw together.
  void check_lockstep() {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the inputs' values
    const auto mix = [&h](std::span<const int32_t> v) {
      h = (h ^ uint64_t(v.size())) * 1099511628211ull;
      for (int32_t x : v) h = (h ^ uint32_t(x)) * 1099511628211ull;
    };
    mix(in_.tokens);
    mix(in_.positions);
    mix(in_.seq_ids);
    mix(in_.logit_rows);
    h = (h ^ uint64_t(in_.argmax_only)) * 1099511628211ull;
    s_.digests_.assign(size_t(split_.n_ranks), 0);
    s_.digests_[size_t(split_.rank)] = h;
    {
      const PhaseTimer t(&s_.times_.communication);
      comm_.all_gather(s_.digests_.data());
    }
    for (int r = 1; r < split_.n_ranks; ++r)
      if (s_.digests_[size_t(r)] != s_.digests_[0])
        throw std::runtime_error("tensor parallel: rank " + std::to_string(r) +
                                 " was given a different step (tokens, positions, sequences) "
                                 "than rank 0: the ranks diverged");
  }

  int32_t seq_of(int64_t t) const { return in_.seq_ids.empty() ? 0 : in_.seq_ids[size_t(t)]; }

  void group_sequences() {
    s_.step_seqs_.clear();
    s_.seq_n_keys_.clear();
    for (int64_t t = 0; t < n_; ++t) {
      const int32_t seq = seq_of(t);
      auto it = std::find(s_.step_seqs_.begin(), s_.step_seqs_.end(), seq);
      if (it == s_.step_seqs_.end()) {
        it = s_.step_seqs_.insert(it, seq);
        s_.seq_n_keys_.push_back(0);
      }
      const size_t slot = size_t(it - s_.step_seqs_.begin());
      s_.token_seq_slot_[size_t(t)] = int32_t(slot);
      s_.seq_n_keys_[slot] = std::max(s_.seq_n_keys_[slot], in_.positions[size_t(t)] + 1);
    }
  }

  float* cos_sin(int table, int64_t t) {
    return s_.cos_sin_.data() + (table * n_ + t) * c_.rope_dim;
  }

  // The per-token vector work between matmuls runs over the pool too: with
  // many tokens per step (batched decode, prefill) it would otherwise leave
  // the other threads waiting. One token (decode) stays on this thread.
  template <class F>
  void for_tokens(F&& fn) {
    pool_.parallel_for(size_t(n_), [&](size_t t0, size_t t1) {
      for (size_t t = t0; t < t1; ++t) fn(int64_t(t));
    });
  }

  void norm_token(int64_t t, const std::vector<float>& weight) {
    rms_norm(s_.x_.data() + t * c_.n_embd, weight.data(), c_.n_embd, c_.rms_eps,
             s_.xn_.data() + t * c_.n_embd);
  }

  void norm_all(const std::vector<float>& weight) {
    for_tokens([&](int64_t t) { norm_token(t, weight); });
  }

  // x += post_norm(proj) (just proj when post_norm is empty), then xn =
  // norm(x) with `norm` (nullptr: no norm), in one pass per token: each
  // token's residual row is still in cache for its norm.
  void add_residual_then_norm(const std::vector<float>& post_norm, const std::vector<float>* norm) {
    for_tokens([&](int64_t t) {
      float* x = s_.x_.data() + t * c_.n_embd;
      float* proj = s_.proj_.data() + t * c_.n_embd;
      if (!post_norm.empty()) rms_norm(proj, post_norm.data(), c_.n_embd, c_.rms_eps, proj);
      for (int i = 0; i < c_.n_embd; ++i) x[i] += proj[i];
      if (norm) norm_token(t, *norm);
    });
  }

  void matmul_batch_into(std::span<const MatmulOutput> outputs, const float* x) {
    const PhaseTimer t(&s_.times_.weight_matmuls);
    matmul_batch(outputs, x, n_, pool_, s_.matmul_);
  }

  // proj = attention(xn), writing this step's K and V into the store.
  void attention_block(int l) {
    const LayerWeights& w = m_.weights().layers[size_t(l)];
    // One parallel region for Q, K and V: the normalized input is quantized once.
    const MatmulOutput qkv[] = {
        {w.attn_q, s_.q_.data()}, {w.attn_k, s_.k_.data()}, {w.attn_v, s_.v_.data()}};
    matmul_batch_into(qkv, s_.xn_.data());
    if (c_.attn_gate) split_query_gate();
    add_bias(s_.q_.data(), w.bias_q, n_);
    add_bias(s_.k_.data(), w.bias_k, n_);
    add_bias(s_.v_.data(), w.bias_v, n_);
    // Q/K norms and RoPE over the pool; the K/V writes stay on this thread,
    // where their checks' exceptions reach the caller.
    for_tokens([&](int64_t t) {
      float* q = s_.q_.data() + t * c_.q_dim();
      float* k = s_.k_.data() + t * c_.kv_dim();
      if (c_.qk_norm) {
        norm_heads(c_, q, c_.n_head, w.attn_q_norm);
        norm_heads(c_, k, c_.n_kv_head, w.attn_k_norm);
      }
      rope_token(m_, l, q, k, cos_sin(m_.rope_index(l), t));
    });
    for (int64_t t = 0; t < n_; ++t)
      kv_.write(l, seq_of(t), in_.positions[size_t(t)], s_.k_.data() + t * c_.kv_dim(),
                s_.v_.data() + t * c_.kv_dim());
    attend(l);
    if (c_.attn_gate) gate_attention();
    row_parallel(w.attn_output, split_.attn_parts, s_.attn_.data());  // proj = attn_output(attn)
    add_bias(s_.proj_.data(), w.bias_o, n_);
  }

  // q_ [n][n_head][query | gate] → q_ [n][q_dim] queries, attn_gate_ [n][q_dim] gates.
  // In place and in order: each query moves to a lower or equal offset.
  void split_query_gate() {
    const int64_t hd = c_.head_dim;
    float* q = s_.q_.data();
    for (int64_t t = 0; t < n_; ++t)
      for (int h = 0; h < c_.n_head; ++h) {
        const float* from = q + (t * c_.n_head + h) * 2 * hd;
        std::memcpy(s_.attn_gate_.data() + (t * c_.n_head + h) * hd, from + hd, hd * 4);
        std::memmove(q + (t * c_.n_head + h) * hd, from, hd * 4);
      }
  }

  // attn *= sigmoid(gate), elementwise.
  void gate_attention() {
    for_tokens([&](int64_t t) {
      float* a = s_.attn_.data() + t * c_.q_dim();
      const float* g = s_.attn_gate_.data() + t * c_.q_dim();
      for (int i = 0; i < c_.q_dim(); ++i) a[i] *= 1.0f / (1.0f + std::exp(-g[i]));
    });
  }

  // proj = a recurrent layer's output (model/gated_delta_net.h).
  void linear_attention_block(int l) {
    const PhaseTimer timer(&s_.times_.attention);
    const LinearAttentionStep step{s_.xn_.data(), n_, in_.positions,
                                   std::span(s_.token_seq_slot_.data(), size_t(n_)), s_.step_seqs_};
    gated_delta_net_block(c_, m_.weights().layers[size_t(l)].linear, l, step, kv_, s_.gdn_, pool_,
                          s_.matmul_, s_.proj_.data());
  }

  // proj = W x for a row-parallel W (model/forward_steps.h).
  void row_parallel(const ColumnParts& w, int total_parts, const float* x) {
    row_parallel_matmul(split_, comm_, w, total_parts, x, n_, s_.proj_.data(), s_.tp_, pool_,
                        s_.matmul_, &s_.times_);
  }

  // Work items are (run of query tokens, kv head), split over threads. A run
  // is up to kMaxRun consecutive tokens of one sequence at ascending
  // positions (a prefill chunk): attend_queries walks the K/V tiles they share
  // once for all of them, with each token's result the same bits as alone.
  // The query heads of one GQA group go together, so each KV record is read
  // once per group. Decode steps have runs of one token. A sliding-window
  // layer reads each sequence from the first position any of its tokens
  // still sees.
  void attend(int l) {
    const PhaseTimer timer(&s_.times_.attention);
    key_ranges(c_.window(l));
    for (size_t i = 0; i < s_.step_seqs_.size(); ++i) {
      s_.seq_spans_[i].clear();
      kv_.spans(l, s_.step_seqs_[i], s_.seq_first_key_[i], s_.seq_n_keys_[i], s_.seq_spans_[i]);
    }
    const std::vector<int32_t>& runs = s_.query_runs_;
    const Scoring scoring{c_.attn_scale, c_.attn_softcap};
    const std::vector<float>& sinks = m_.weights().layers[size_t(l)].attn_sinks;  // [n_head]
    const size_t per_thread = attention_queries_scratch_floats(c_.head_dim);
    const KvFormat format = kv_.format();
    const int group = c_.gqa_group();
    const size_t q_dim = size_t(c_.q_dim());
    const int64_t items = int64_t(runs.size() - 1) * c_.n_kv_head;
    const auto cuts = attention_cuts(s_.run_work_, c_.n_kv_head, pool_.size());
    pool_.run_stealing(size_t(items), cuts, 1, 1, [&](int ti, size_t b, size_t e) {
      float* scratch = s_.head_scratch_.data() + size_t(ti) * per_thread;
      for (int64_t item = int64_t(b); item < int64_t(e); ++item) {
        const size_t r = size_t(item / c_.n_kv_head);
        const int g = int(item % c_.n_kv_head);
        const int64_t t = runs[r];
        const size_t slot = size_t(s_.token_seq_slot_[size_t(t)]);
        const auto& spans = s_.seq_spans_[slot];
        const KvView kv{spans.data(), spans.size(), s_.seq_first_key_[slot]};
        const int64_t first = t * c_.q_dim() + int64_t(g) * group * c_.head_dim;
        Scoring group_scoring = scoring;  // the sinks of kv head g's query heads
        if (!sinks.empty()) group_scoring.sinks = sinks.data() + g * group;
        attend_queries(s_.q_.data() + first, q_dim, group, s_.token_keys_.data() + t,
                       runs[r + 1] - int32_t(t), kv, g, c_.head_dim, format, group_scoring,
                       s_.attn_.data() + first, q_dim, scratch);
      }
    });
  }

  // Splits the step's tokens into query runs (see attend()): s_.query_runs_
  // gets their first tokens, then n_tokens as an end marker.
  void group_query_runs() {
    const int max_run = std::max(1, std::min(kMaxRun, kAttentionMaxStackedHeads / c_.gqa_group()));
    std::vector<int32_t>& runs = s_.query_runs_;  // reserved: n_ + 1 entries
    runs.clear();
    for (int64_t t = 0; t < n_; ++t) {
      const bool extends = !runs.empty() && t - runs.back() < max_run &&
                           s_.token_seq_slot_[size_t(t)] == s_.token_seq_slot_[size_t(t - 1)] &&
                           in_.positions[size_t(t)] > in_.positions[size_t(t - 1)];
      if (!extends) runs.push_back(int32_t(t));
    }
    runs.push_back(int32_t(n_));
    keys_window_ = -1;
  }

  // The positions each token attends under `window` (0 = all earlier ones),
  // the first position each sequence must provide, and s_.run_work_: the
  // prefix sums over runs of the keys their queries walk (for one kv head).
  // Layers share them until the window changes.
  void key_ranges(int32_t window) {
    if (window == keys_window_) return;
    keys_window_ = window;
    s_.seq_first_key_.assign(s_.step_seqs_.size(), INT32_MAX);
    for (int64_t t = 0; t < n_; ++t) {
      const int32_t pos = in_.positions[size_t(t)];
      const KeyRange keys = attended_keys(window, pos);
      s_.token_keys_[size_t(t)] = keys;
      int32_t& first = s_.seq_first_key_[size_t(s_.token_seq_slot_[size_t(t)])];
      first = std::min(first, keys.begin);
    }
    const std::vector<int32_t>& runs = s_.query_runs_;
    std::vector<int64_t>& work = s_.run_work_;  // reserved: n_ + 1 entries
    work.assign(1, 0);
    for (size_t r = 0; r + 1 < runs.size(); ++r) {
      int64_t keys = 0;
      for (int32_t t = runs[r]; t < runs[r + 1]; ++t)
        keys += s_.token_keys_[size_t(t)].end - s_.token_keys_[size_t(t)].begin;
      work.push_back(work.back() + keys);
    }
  }

  // proj = FFN(xn): the gated activation (SwiGLU, or GELU for gemma) of the
  // gate and up projections, then down.
  void ffn_block(int l) {
    const LayerWeights& w = m_.weights().layers[size_t(l)];
    if (c_.moe.n_expert > 0) {  // model/moe_ffn.h
      const PhaseTimer t(&s_.times_.weight_matmuls);
      return moe_ffn(c_, w.moe, s_.xn_.data(), n_, s_.proj_.data(), s_.moe_, pool_, s_.matmul_);
    }
    const MatmulOutput gate_up[] = {{w.ffn_gate, s_.gate_.data()}, {w.ffn_up, s_.up_.data()}};
    matmul_batch_into(gate_up, s_.xn_.data());
    for_tokens([&](int64_t t) {
      gated_activation(c_, s_.gate_.data() + t * c_.n_ff, s_.up_.data() + t * c_.n_ff, c_.n_ff);
    });
    row_parallel(w.ffn_down, split_.ffn_parts, s_.gate_.data());  // proj = ffn_down(gate)
  }

  // Only the rows that need logits go through the final norm and the output
  // matrix (on several ranks: each its vocabulary rows, then gathered).
  void output() {
    float* logits = logits_;
    const int64_t rows = int64_t(in_.logit_rows.size());
    if (rows == 0) return;
    const PhaseTimer timer(&s_.times_.output_matmul);
    float* normed = in_.final_hidden ? in_.final_hidden : s_.xn_.data();
    for (int64_t i = 0; i < rows; ++i)
      rms_norm(s_.x_.data() + int64_t(in_.logit_rows[size_t(i)]) * c_.n_embd,
               m_.weights().output_norm.data(), c_.n_embd, c_.rms_eps, normed + i * c_.n_embd);
    if (in_.final_hidden) return;
    if (split_.n_ranks == 1) {
      matmul(m_.weights().output, s_.xn_.data(), rows, logits, pool_, s_.matmul_);
      soft_cap_logits(c_, logits, rows * c_.n_vocab);
      return;
    }
    // tp_.gathered: [rank][rows][rank's vocab rows]; rank r's block starts at rows *
    // vocab_first[r]. Greedy-only: the slice summaries of every rank follow
    // ([rank][rows][kSliceMaxFloats]).
    const size_t r = size_t(split_.rank);
    const bool argmax = in_.argmax_only && fits_vocab_argmax(c_.n_vocab);
    const size_t summaries = argmax ? size_t(split_.n_ranks * rows * kSliceMaxFloats) : 0;
    float* mine = vocab_slice(split_, rows, c_.n_vocab, summaries, s_.tp_);
    matmul(m_.weights().output, s_.xn_.data(), rows, mine, pool_, s_.matmul_);
    soft_cap_logits(c_, mine, rows * split_.vocab_rows[r]);
    if (argmax) return gather_argmax(mine, rows, logits);
    gather_vocab_logits(split_, comm_, rows, c_.n_vocab, s_.tp_, logits, &s_.times_);
  }

  // Greedy-only rows: every rank's slice summary, gathered, then the rows
  // rebuilt from them (model/vocab_argmax.h). The summaries sit in
  // tp_.gathered after the space of all logits, which output() sized for them.
  void gather_argmax(const float* mine, int64_t rows, float* logits) {
    const size_t r = size_t(split_.rank), n_ranks = size_t(split_.n_ranks);
    const size_t block = size_t(rows * kSliceMaxFloats);
    float* summaries = s_.tp_.gathered.data() + size_t(rows) * size_t(c_.n_vocab);
    summarize_vocab_slice(mine, rows, split_.vocab_rows[r], split_.vocab_first[r],
                          summaries + r * block);
    {
      const PhaseTimer t(&s_.times_.communication);
      comm_.all_gather(summaries, block);
    }
    rebuild_argmax_rows(summaries, int64_t(n_ranks), rows, c_.n_vocab, logits);
  }

  const Model& m_;
  const ModelConfig& c_;  // this rank's share (model.rank_config())
  const TensorSplit& split_;
  Communicator& comm_;
  const StepInputs& in_;
  KvStore& kv_;
  ForwardScratch& s_;
  ThreadPool& pool_;
  const int64_t n_;
  int32_t keys_window_ = -1;  // the window s_.token_keys_ hold ranges for (-1: none yet)
  float* logits_ = nullptr;   // [logit rows][n_vocab] run()'s output
};

void forward(const Model& model, const StepInputs& in, KvStore& kv, ForwardScratch& scratch,
             ThreadPool& pool, Communicator& comm, float* logits) {
  check_communicator(model, comm, "forward");
  ForwardPass(model, in, kv, scratch, pool, comm).run(logits);
}

void forward(const Model& model, const StepInputs& in, KvStore& kv, ForwardScratch& scratch,
             ThreadPool& pool, float* logits) {
  forward(model, in, kv, scratch, pool, one_process_communicator(), logits);
}

}  // namespace kvforge
