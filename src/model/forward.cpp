#include "model/forward.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "model/block_steps.h"
#include "model/gemma4_moe.h"
#include "model/layer_walk.h"
#include "model/moe_tensor_parallel.h"
#include "model/per_layer_embedding.h"

namespace kvforge {

void ForwardScratch::reserve(int max_tokens, int n_threads) {
  const ModelConfig& c = config_;
  const size_t head_floats =
      size_t(std::max(1, n_threads)) * attention_queries_scratch_floats(c.max_head_dim());
  if (head_scratch_.size() < head_floats) head_scratch_.resize(head_floats);
  if (max_tokens <= capacity_) return;
  const size_t n = size_t(max_tokens);
  x_.resize(n * c.n_embd);
  xn_.resize(n * std::max(c.n_embd, c.max_q_dim()));
  q_.resize(n * c.max_q_dim() * (c.attn_gate ? 2 : 1));
  if (c.attn_gate) attn_gate_.resize(n * c.max_q_dim());
  gdn_.reserve(c, max_tokens);
  k_.resize(n * c.max_kv_dim());
  v_.resize(n * c.max_kv_dim());
  attn_.resize(n * c.max_q_dim());
  gate_.resize(n * c.n_ff);
  up_.resize(n * c.n_ff);
  proj_.resize(n * c.n_embd);
  ple_.resize(n * size_t(c.n_layer) * size_t(c.n_embd_per_layer));
  ple_gate_.resize(n * size_t(c.n_embd_per_layer));
  cos_sin_.resize(2 * n * c.max_rope_dim());  // sliding-window layers may have their own table
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
        env_{model, comm, pool, s.matmul_, s.tp_, &s.times_},
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

  // The steps walk_forward() calls (model/layer_walk.h): the shared block
  // steps (model/block_steps.h) on this scratch, and attend() over the KvStore.
  void embed() {
    float* const tables[2] = {cos_sin(0, 0), cos_sin(1, 0)};
    embed_rows(m_, in_.tokens, in_.positions, s_.x_.data(), tables);
    if (c_.n_embd_per_layer > 0) per_layer_inputs(env_, in_.tokens, s_.x_.data(), s_.ple_.data());
  }
  void layer_tail(int l) {
    per_layer_block(env_, l, s_.ple_.data(), n_, s_.x_.data(), s_.ple_gate_.data(),
                    s_.proj_.data());
  }
  void norm(LayerNorm which, int l) {
    norm_rows(env_, layer_norm_weight(m_, which, l), s_.x_.data(), n_, s_.xn_.data());
  }
  void residual_then_norm(LayerNorm post, int l, LayerNorm next, int next_layer) {
    kvforge::residual_then_norm(env_, layer_norm_weight(m_, post, l),
                                &layer_norm_weight(m_, next, next_layer), s_.proj_.data(),
                                s_.x_.data(), n_, s_.xn_.data());
  }
  void residual(LayerNorm post, int l) {
    kvforge::residual_then_norm(env_, layer_norm_weight(m_, post, l), nullptr, s_.proj_.data(),
                                s_.x_.data(), n_, nullptr);
  }
  void attention_input(int l) {
    kvforge::attention_input(env_, l, s_.xn_.data(), cos_sin(m_.rope_index(l), 0), n_,
                             {s_.q_.data(), s_.k_.data(), s_.v_.data(), s_.attn_gate_.data()});
  }
  // attn = attention of q over the store, after writing this step's K and V
  // (on this thread, where the store's checks' exceptions reach the caller);
  // a shared-KV layer writes none and reads its source layer's.
  void attend(int l) {
    const int64_t kv_dim = c_.layer_kv_dim(l);
    for (int64_t t = 0; t < n_ && c_.owns_kv(l); ++t)
      kv_.write(l, seq_of(t), in_.positions[size_t(t)], s_.k_.data() + t * kv_dim,
                s_.v_.data() + t * kv_dim);
    attend_store(l);
  }
  void attention_output(int l) {
    kvforge::attention_output(env_, l, s_.attn_.data(), s_.attn_gate_.data(), n_, s_.proj_.data());
  }
  // proj = FFN(xn): mixture of experts (model/moe_ffn.h), Gemma 4's dense FFN
  // and experts (model/gemma4_moe.h), or dense.
  void ffn_block(int l) {
    if (c_.experts_beside_ffn()) {
      gemma4_moe_ffn(env_, l, s_.x_.data(), s_.xn_.data(), n_, s_.gate_.data(), s_.up_.data(),
                     s_.moe_, s_.proj_.data());
      return;
    }
    if (c_.moe.n_expert > 0) {
      const PhaseTimer t(&s_.times_.weight_matmuls);
      const TpRanks ranks{split_, comm_, s_.tp_};
      return moe_ffn(c_, m_.weights().layers[size_t(l)].moe, s_.xn_.data(), n_, s_.proj_.data(),
                     s_.moe_, pool_, s_.matmul_, split_.n_ranks > 1 ? &ranks : nullptr);
    }
    dense_ffn(env_, l, s_.xn_.data(), n_, s_.gate_.data(), s_.up_.data(), s_.proj_.data());
  }
  // Only the rows that need logits go through the final norm and the output
  // matrix; embeddings stop after the norm.
  void output() {
    if (!in_.final_hidden)
      return output_logits(env_, s_.x_.data(), in_.logit_rows, s_.xn_.data(), in_.argmax_only,
                           logits_);
    const PhaseTimer timer(&s_.times_.output_matmul);
    final_norm_rows(env_, s_.x_.data(), in_.logit_rows, in_.final_hidden);
  }
  // proj = a recurrent layer's output (model/gated_delta_net.h).
  void linear_attention_block(int l) {
    const PhaseTimer timer(&s_.times_.attention);
    const LinearAttentionStep step{s_.xn_.data(), n_, in_.positions,
                                   std::span(s_.token_seq_slot_.data(), size_t(n_)), s_.step_seqs_};
    const TpRanks ranks{split_, comm_, s_.tp_};
    gated_delta_net_block(c_, m_.weights().layers[size_t(l)].linear, l, step, kv_, s_.gdn_, pool_,
                          s_.matmul_, s_.proj_.data(), split_.n_ranks > 1 ? &ranks : nullptr);
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
    return s_.cos_sin_.data() + (table * n_ + t) * c_.max_rope_dim();
  }

  // Work items are (run of query tokens, kv head), split over threads. A run
  // is up to kMaxRun consecutive tokens of one sequence at ascending
  // positions (a prefill chunk): attend_queries walks the K/V tiles they share
  // once for all of them, with each token's result the same bits as alone.
  // The query heads of one GQA group go together, so each KV record is read
  // once per group. Decode steps have runs of one token. A sliding-window
  // layer reads each sequence from the first position any of its tokens
  // still sees.
  void attend_store(int l) {
    const PhaseTimer timer(&s_.times_.attention);
    key_ranges(c_.window(l));
    for (size_t i = 0; i < s_.step_seqs_.size(); ++i) {
      s_.seq_spans_[i].clear();
      kv_.spans(c_.kv_source(l), s_.step_seqs_[i], s_.seq_first_key_[i], s_.seq_n_keys_[i],
                s_.seq_spans_[i]);
    }
    const std::vector<int32_t>& runs = s_.query_runs_;
    const Scoring scoring{c_.attn_scale, c_.attn_softcap};
    const std::vector<float>& sinks = m_.weights().layers[size_t(l)].attn_sinks;  // [n_head]
    const size_t per_thread = attention_queries_scratch_floats(c_.max_head_dim());
    const KvFormat format = kv_.format();
    const ModelConfig& lc = m_.layer_config(l);  // the layer's head size and KV heads
    const int group = lc.gqa_group(), n_kv_head = lc.n_kv_head, head_dim = lc.head_dim;
    const size_t q_dim = size_t(c_.n_head) * size_t(head_dim);
    const int64_t items = int64_t(runs.size() - 1) * n_kv_head;
    const auto cuts = attention_cuts(s_.run_work_, n_kv_head, pool_.size());
    pool_.run_stealing(size_t(items), cuts, 1, 1, [&](int ti, size_t b, size_t e) {
      float* scratch = s_.head_scratch_.data() + size_t(ti) * per_thread;
      for (int64_t item = int64_t(b); item < int64_t(e); ++item) {
        const size_t r = size_t(item / n_kv_head);
        const int g = int(item % n_kv_head);
        const int64_t t = runs[r];
        const size_t slot = size_t(s_.token_seq_slot_[size_t(t)]);
        const auto& spans = s_.seq_spans_[slot];
        const KvView kv{spans.data(), spans.size(), s_.seq_first_key_[slot]};
        const int64_t first = t * int64_t(q_dim) + int64_t(g) * group * head_dim;
        Scoring group_scoring = scoring;  // the sinks of kv head g's query heads
        if (!sinks.empty()) group_scoring.sinks = sinks.data() + g * group;
        attend_queries(s_.q_.data() + first, q_dim, group, s_.token_keys_.data() + t,
                       runs[r + 1] - int32_t(t), kv, g, head_dim, format, group_scoring,
                       s_.attn_.data() + first, q_dim, scratch);
      }
    });
  }

  // Splits the step's tokens into query runs (see attend()): s_.query_runs_
  // gets their first tokens, then n_tokens as an end marker.
  void group_query_runs() {
    const int max_run =
        std::max(1, std::min(kMaxRun, kAttentionMaxStackedHeads / c_.max_gqa_group()));
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

  const Model& m_;
  const ModelConfig& c_;  // this rank's share (model.rank_config())
  const TensorSplit& split_;
  Communicator& comm_;
  const StepInputs& in_;
  KvStore& kv_;
  ForwardScratch& s_;
  ThreadPool& pool_;
  const StepEnv env_;
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
