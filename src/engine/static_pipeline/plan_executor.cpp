#include "engine/static_pipeline/plan_executor.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/formats/row_codec.h"
#include "core/ops/attention.h"
#include "model/block_steps.h"
#include "model/gemma4_moe.h"
#include "model/layer_walk.h"
#include "model/per_layer_embedding.h"
#include "model/tp_ranks.h"

namespace kvforge {
namespace {

// Whether valid row t continues the run of row t - 1: same slot, next position.
bool continues_run(const PlanInputs& in, int32_t t) {
  return t > 0 && in.valid[t - 1] && in.slots[t - 1] == in.slots[t] &&
         in.positions[t - 1] + 1 == in.positions[t];
}

// One run of a plan; methods are the op kinds.
class PlanRun {
 public:
  PlanRun(const Model& model, Communicator& comm, const Plan& plan, const PlanInputs& in,
          StaticKvCache& cache, uint8_t* arena, MatmulScratch& scratch, ThreadPool& pool,
          TpExchange& tp, MoeScratch& moe, int64_t& moe_tokens, StaticLinearAttention* linear)
      : m_(model),
        c_(model.rank_config()),
        p_(plan),
        in_(in),
        cache_(cache),
        arena_(arena),
        pool_(pool),
        moe_(moe),
        moe_tokens_(moe_tokens),
        linear_(linear),
        env_{model, comm, pool, scratch, tp, nullptr} {}

  float* f32(uint16_t b) const { return reinterpret_cast<float*>(arena_ + p_.buffers[b].offset); }
  uint8_t* bytes(uint16_t b) const { return arena_ + p_.buffers[b].offset; }

  // Masks: the slot masks, this run's attention mask and row runs.
  void masks(const PlanOp& op) {
    update_mask();
    build_attn_mask(op.buffers[0]);
    if (p_.row_runs_buffer != kNoBuffer) row_runs();
  }

  // Attend: K/V written, then each row over its slot's cache with the mask
  // (a shared layer's: its source layer's K/V, written by that layer).
  void attend(const PlanOp& op) {
    const auto& b = op.buffers;
    if (c_.owns_kv(op.layer)) kv_write(op.layer, b[1], b[2]);
    if (c_.attn_sinks) return sink_attention(op.layer, b[0], b[4]);
    attention(op.layer, b[0], b[3], b[4]);
  }

  // WindowAttend: K/V staged, the rows attend the ring and the staged runs,
  // then K/V written over the ring (plan.h) by the last layer reading them.
  void window_attend(const PlanOp& op) {
    const auto& b = op.buffers;
    const int src = c_.kv_source(op.layer);
    if (src == op.layer) kv_stage(op.layer, b[1], b[2], b[3]);
    window_attention(op.layer, b[0], b[3], b[4]);
    if (last_reader(op.layer)) kv_write(src, b[1], b[2]);
  }

  // The walk's shared steps (model/block_steps.h) on the op's buffers.
  void step(const PlanOp& op) {
    const auto buf = [&](int i) {
      return op.buffers[i] == kNoBuffer ? nullptr : f32(op.buffers[i]);
    };
    const int l = op.layer;
    switch (op.code) {
      case OpCode::Embed: {
        float* const tables[2] = {buf(1), buf(2)};
        embed_rows(m_, in_.tokens, in_.positions, buf(0), tables);
        if (c_.n_embd_per_layer > 0) per_layer_inputs(env_, in_.tokens, buf(0), buf(3));
        return;
      }
      case OpCode::LayerTail:
        return per_layer_block(env_, l, buf(2), p_.rows, buf(0), buf(3), buf(1));
      case OpCode::Norm:
        return norm_rows(env_, layer_norm_weight(m_, LayerNorm(op.norm), l), buf(0), p_.rows,
                         buf(1));
      case OpCode::AttentionIn:
        return attention_input(env_, l, buf(0), buf(1), p_.rows, {buf(2), buf(3), buf(4), buf(5)});
      case OpCode::AttentionOut:
        return attention_output(env_, l, buf(0), buf(2), p_.rows, buf(1));
      case OpCode::ResidualNorm: {
        const std::vector<float>* next =
            op.next_norm == kNoNorm
                ? nullptr
                : &layer_norm_weight(m_, LayerNorm(op.next_norm), op.next_layer);
        return residual_then_norm(env_, layer_norm_weight(m_, LayerNorm(op.norm), l), next, buf(0),
                                  buf(1), p_.rows, buf(2));
      }
      case OpCode::Ffn:
        return dense_ffn(env_, l, buf(0), p_.rows, buf(1), buf(2), buf(3));
      case OpCode::LinearAttention:
        return linear_->run(env_, l, buf(0), in_.positions, in_.slots, in_.valid, cache_, buf(1));
      case OpCode::MoeFfn:
        if (c_.experts_beside_ffn()) {  // padding rows get the dense FFN only
          moe_tokens_ = gemma4_moe_ffn(env_, l, buf(2), buf(0), p_.rows, buf(3), buf(4), moe_,
                                       buf(1), in_.valid.data());
          return;
        }
        return moe_ffn_of_valid_rows(l, buf(0), buf(1));
      case OpCode::Logits:
        return output_logits(env_, buf(0), in_.logit_rows, buf(1), false, buf(2));
      default:
        return;
    }
  }

 private:
  // The mixture of experts over the valid rows only: a padding row would pick experts of its
  // own and have their weights read for nothing (a decode step reads only the picked
  // experts). The valid rows of xn move up to the front (xn is dead after this op: the
  // residual step writes the next norm into it), run as one batch, and their outputs go back
  // to their rows; a padding row's output is zeros. moe_ffn's sums for a token do not depend
  // on its neighbours, so the valid rows get the bits they had among the padding.
  void moe_ffn_of_valid_rows(int l, float* xn, float* out) {
    const int64_t d = c_.n_embd;
    int64_t n = 0;
    for (int32_t t = 0; t < p_.rows; ++t) {
      if (!in_.valid[size_t(t)]) continue;
      if (n != t) std::copy_n(xn + t * d, d, xn + n * d);  // n < t: moves up
      ++n;
    }
    moe_tokens_ = n;
    if (n > 0) {  // every rank has the same rows: all skip or all run
      const TpRanks ranks{m_.split(), env_.comm, env_.tp};
      moe_ffn(c_, m_.weights().layers[size_t(l)].moe, xn, n, out, moe_, pool_, env_.matmul,
              m_.split().n_ranks > 1 ? &ranks : nullptr);
    }
    for (int32_t t = p_.rows - 1; t >= 0; --t) {  // from the end: row t >= its compact row
      if (!in_.valid[size_t(t)]) {
        std::fill_n(out + t * d, d, 0.0f);
      } else if (--n != t) {
        std::copy_n(out + n * d, d, out + t * d);
      }
    }
  }

  // Whether `layer` is the last one reading its K/V source's records (the
  // source itself when no layer shares them): its op writes them.
  bool last_reader(int layer) const {
    const int src = c_.kv_source(layer);
    for (int l = layer + 1; l < c_.n_layer; ++l)
      if (c_.kv_source(l) == src) return false;
    return true;
  }

  void update_mask() {
    for (int32_t t = 0; t < p_.rows; ++t)
      if (in_.valid[t]) cache_.mask(in_.slots[t])[in_.positions[t]] = 1;
  }

  // A row attends to the filled positions of its slot up to its own position
  // (causal within a prefill chunk); padding rows attend to nothing.
  void build_attn_mask(uint16_t mask) {
    const int32_t kv = p_.kv_len;
    for (int32_t t = 0; t < p_.rows; ++t) {
      uint8_t* row = bytes(mask) + size_t(t) * size_t(kv);
      if (!in_.valid[t]) {
        std::fill(row, row + kv, uint8_t{0});
        continue;
      }
      const uint8_t* filled = cache_.mask(in_.slots[t]);
      const int32_t upto = std::min(kv, in_.positions[t] + 1);
      for (int32_t j = 0; j < upto; ++j) row[j] = filled[j] ? 1 : 0;
      std::fill(row + upto, row + kv, uint8_t{0});
    }
  }

  // Each row's run: the first row of the rows of its slot at consecutive
  // positions up to it (check_inputs made sure a slot has one run).
  void row_runs() {
    int32_t* runs = reinterpret_cast<int32_t*>(bytes(p_.row_runs_buffer));
    for (int32_t t = 0; t < p_.rows; ++t)
      runs[t] = !in_.valid[t] ? -1 : continues_run(in_, t) ? runs[t - 1] : t;
  }

  void kv_write(int layer, uint16_t k, uint16_t v) {
    const size_t kv_dim = size_t(c_.layer_kv_dim(layer));
    for (int32_t t = 0; t < p_.rows; ++t)
      if (in_.valid[t])
        cache_.write(layer, in_.slots[t], in_.positions[t], f32(k) + size_t(t) * kv_dim,
                     f32(v) + size_t(t) * kv_dim);
  }

  // Every row's K and V as the cache's head records ([rows][layer's n_kv_head] K
  // records, then V's), the bytes kv_write stores.
  void kv_stage(int layer, uint16_t k, uint16_t v, uint16_t staged) {
    const KvFormat format = cache_.format();
    const int hd = c_.layer_head_dim(layer);
    const size_t n_kv = size_t(c_.layer_n_kv_head(layer));  // the layer's KV heads
    const size_t kb = kv_head_bytes(format.k, hd), vb = kv_head_bytes(format.v, hd);
    uint8_t* k_records = bytes(staged);
    uint8_t* v_records = k_records + size_t(p_.rows) * n_kv * kb;
    for (int32_t t = 0; t < p_.rows; ++t)
      for (size_t h = 0; h < n_kv; ++h) {
        const size_t at = (size_t(t) * n_kv + h) * size_t(hd);
        const size_t record = size_t(t) * n_kv + h;
        kv_encode_head(format.k, f32(k) + at, k_records + record * kb, hd);
        kv_encode_head(format.v, f32(v) + at, v_records + record * vb, hd);
      }
  }

  // Sliding-window attention: row t at position p attends (p - window, p],
  // which are the positions before its run in the cache's ring (not yet
  // overwritten: the run's K/V are written after this op) and then its
  // run's staged records up to itself. One query head per item, as the
  // plan split them; attend_queries over exactly those positions gives the
  // dynamic forward pass's bits.
  void window_attention(int layer, uint16_t q, uint16_t staged_records, uint16_t attn) {
    const int32_t window = c_.window(layer);
    const int src = c_.kv_source(layer);  // the ring read (the layer's own unless shared)
    const int hd = c_.layer_head_dim(layer);
    const size_t n_kv = size_t(c_.layer_n_kv_head(layer));  // the layer's KV heads
    const KvFormat format = cache_.format();
    const size_t kb = kv_head_bytes(format.k, hd), vb = kv_head_bytes(format.v, hd);
    const uint8_t* k_records = bytes(staged_records);
    const uint8_t* v_records = k_records + size_t(p_.rows) * n_kv * kb;
    const int32_t* runs = reinterpret_cast<const int32_t*>(bytes(p_.row_runs_buffer));
    const size_t q_dim = size_t(c_.n_head) * size_t(hd);
    const size_t per_thread = attention_queries_scratch_floats(c_.max_head_dim());
    for_attention_items(layer, attn, per_thread, [&](int32_t t, int h, float* out, float* scratch) {
      const int32_t pos = in_.positions[t];
      const int32_t run = runs[t];
      const int32_t run_first = in_.positions[run];  // the run's positions: [run_first, pos]
      const KeyRange keys = attended_keys(window, pos);
      KvSpan spans[3];
      const int n_cached = keys.begin < run_first
                               ? cache_.ring_spans(src, in_.slots[t], keys.begin, run_first, spans)
                               : 0;
      KvSpan& staged = spans[n_cached];
      staged.k = k_records + size_t(run) * n_kv * kb;
      staged.v = v_records + size_t(run) * n_kv * vb;
      staged.k_pos_stride = n_kv * kb;
      staged.k_head_stride = kb;
      staged.v_pos_stride = n_kv * vb;
      staged.v_head_stride = vb;
      staged.n = pos - run_first + 1;
      const KvView kv{spans, size_t(n_cached) + 1, std::min(keys.begin, run_first)};
      attend_queries(f32(q) + size_t(t) * q_dim + size_t(h) * size_t(hd), q_dim, 1, &keys, 1, kv,
                     h / kv_group(layer), hd, format, scoring(layer, h), out, q_dim, scratch);
    });
  }

  // Query heads per KV head in `layer` (Gemma 4's windowed layers may have their own count).
  int kv_group(int layer) const { return c_.n_head / c_.layer_n_kv_head(layer); }

  // Query head h's scoring in `layer`: scale, soft-cap and its sink (gpt-oss).
  Scoring scoring(int layer, int h) const {
    const std::vector<float>& sinks = m_.weights().layers[size_t(layer)].attn_sinks;  // [n_head]
    return {c_.attn_scale, c_.attn_softcap, sinks.empty() ? nullptr : sinks.data() + h};
  }

  // A full layer with sinks: each row over exactly its positions [0, pos]
  // (filled: a slot's valid part is a prefix), through attend_queries as the
  // dynamic pass reads them, since the masked kernel has no sink term.
  void sink_attention(int layer, uint16_t q, uint16_t attn) {
    const KvFormat format = cache_.format();
    const int hd = c_.layer_head_dim(layer);
    const size_t q_dim = size_t(c_.n_head) * size_t(hd);
    const size_t per_thread = attention_queries_scratch_floats(c_.max_head_dim());
    for_attention_items(layer, attn, per_thread, [&](int32_t t, int h, float* out, float* scratch) {
      const KeyRange keys{0, in_.positions[t] + 1};
      const KvSpan span = cache_.span(c_.kv_source(layer), in_.slots[t], keys.end);
      const KvView kv{&span, 1, 0};
      attend_queries(f32(q) + size_t(t) * q_dim + size_t(h) * size_t(hd), q_dim, 1, &keys, 1, kv,
                     h / kv_group(layer), hd, format, scoring(layer, h), out, q_dim, scratch);
    });
  }

  // Over the plan's whole KV length, with the mask; items split over threads
  // as the plan fixed them.
  void attention(int layer, uint16_t q, uint16_t mask, uint16_t attn) {
    const float scale = c_.attn_scale;
    const int hd = c_.layer_head_dim(layer);
    const size_t q_dim = size_t(c_.n_head) * size_t(hd);
    const size_t per_thread = attention_scratch_floats(c_.max_head_dim());
    const KvFormat format = cache_.format();
    for_attention_items(layer, attn, per_thread, [&](int32_t t, int h, float* out, float* scratch) {
      const KvSpan span = cache_.span(c_.kv_source(layer), in_.slots[t], p_.kv_len);
      attend_one_head(f32(q) + size_t(t) * q_dim + size_t(h) * size_t(hd), &span, 1, p_.kv_len,
                      h / kv_group(layer), hd, format, scale, out, scratch,
                      bytes(mask) + size_t(t) * size_t(p_.kv_len), c_.attn_softcap);
    });
  }

  // fn(row t, query head h, its output in attn, the thread's scratch) for
  // each attention item of this thread's share of the plan's fixed split;
  // a padding row attends to nothing: its outputs are zeros. Heads have
  // `layer`'s size (ModelConfig::layer_head_dim).
  template <class F>
  void for_attention_items(int layer, uint16_t attn, size_t per_thread, F&& fn) {
    const size_t hd = size_t(c_.layer_head_dim(layer)), q_dim = size_t(c_.n_head) * hd;
    pool_.run([&](int ti, int) {
      float* scratch = f32(p_.attention_scratch_buffer) + size_t(ti) * per_thread;
      for (int32_t item = p_.attention_split[size_t(ti)]; item < p_.attention_split[size_t(ti) + 1];
           ++item) {
        const int32_t t = item / c_.n_head;
        const int h = item % c_.n_head;
        float* out = f32(attn) + size_t(t) * q_dim + size_t(h) * hd;
        if (in_.valid[t])
          fn(t, h, out, scratch);
        else
          std::fill(out, out + hd, 0.0f);
      }
    });
  }

  const Model& m_;
  const ModelConfig& c_;
  const Plan& p_;
  const PlanInputs& in_;
  StaticKvCache& cache_;
  uint8_t* arena_;
  ThreadPool& pool_;
  MoeScratch& moe_;
  int64_t& moe_tokens_;
  StaticLinearAttention* linear_;  // hybrid models only
  const StepEnv env_;              // the shared steps run with the caller's scratch, untimed
};

// One op of a plan: the static pipeline's own (masks, attention over its
// cache) or a shared step of the forward pass.
void run_op(PlanRun& run, const PlanOp& op) {
  switch (op.code) {
    case OpCode::Masks:
      return run.masks(op);
    case OpCode::Attend:
      return run.attend(op);
    case OpCode::WindowAttend:
      return run.window_attend(op);
    default:
      return run.step(op);
  }
}

[[noreturn]] void bad_input(const Plan& p, const std::string& what) {
  throw std::invalid_argument("plan " + p.label() + ": " + what);
}

}  // namespace

PlanExecutor::PlanExecutor(const Model& model, Communicator& comm, const Plan& plan,
                           int32_t n_threads)
    : model_(model), comm_(comm), plan_(plan), n_threads_(n_threads) {
  moe_.reserve(model.rank_config(), plan.rows);
  if (model.rank_config().hybrid()) linear_.emplace(model.rank_config(), plan.rows);
}

void PlanExecutor::check_inputs(const PlanInputs& in, const StaticKvCache& cache, uint8_t* arena,
                                const MatmulScratch& scratch, const ThreadPool& pool) const {
  const Plan& p = plan_;
  const size_t rows = size_t(p.rows);
  if (in.tokens.size() != rows || in.positions.size() != rows || in.slots.size() != rows ||
      in.valid.size() != rows || in.logit_rows.size() != size_t(p.n_logit_rows))
    bad_input(p, "inputs must have " + std::to_string(rows) + " rows and " +
                     std::to_string(p.n_logit_rows) + " logit rows");
  if (pool.size() != n_threads_)
    bad_input(p, "compiled for " + std::to_string(n_threads_) + " threads, the pool has " +
                     std::to_string(pool.size()));
  if (!arena || reinterpret_cast<uintptr_t>(arena) % 64 != 0)
    bad_input(p, "arena missing or not 64-byte aligned");
  if (scratch.activations.size() < p.matmul_scratch_bytes)
    bad_input(p, "matmul scratch not reserved to the plan's size");
  if (cache.capacity() < p.kv_len)
    bad_input(p, "KV cache capacity " + std::to_string(cache.capacity()) + " < plan KV length");
  const int32_t n_vocab = model_.config().n_vocab;
  for (size_t t = 0; t < rows; ++t) {
    if (in.tokens[t] < 0 || in.tokens[t] >= n_vocab)
      bad_input(p, "row " + std::to_string(t) + ": token id " + std::to_string(in.tokens[t]) +
                       " is outside the vocabulary [0, " + std::to_string(n_vocab) + ")");
    if (in.positions[t] < 0 || (in.valid[t] && in.positions[t] >= p.kv_len))
      bad_input(p, "row " + std::to_string(t) + ": position " + std::to_string(in.positions[t]) +
                       " outside the KV length " + std::to_string(p.kv_len));
    if (in.valid[t] && (in.slots[t] < 0 || in.slots[t] >= cache.slots()))
      bad_input(p, "row " + std::to_string(t) + ": slot " + std::to_string(in.slots[t]) +
                       " outside [0, " + std::to_string(cache.slots()) + ")");
  }
  for (int32_t r : in.logit_rows)
    if (r < 0 || size_t(r) >= rows)
      bad_input(p, "logit row " + std::to_string(r) + " out of range");
  if (p.row_runs_buffer != kNoBuffer) check_runs(in, cache);
}

// A sliding-window layer reads a row's earlier positions from the ring
// before its run and from the staged run itself: each slot's rows must be
// one run at consecutive positions, and the window before it must still be
// in the ring (it is, unless the slot was truncated further back than the
// ring reaches).
void PlanExecutor::check_runs(const PlanInputs& in, const StaticKvCache& cache) const {
  const Plan& p = plan_;
  const int32_t window = model_.config().sliding_window;
  for (int32_t t = 0; t < p.rows; ++t) {
    if (!in.valid[t] || continues_run(in, t)) continue;
    const int32_t slot = in.slots[t];
    for (int32_t u = 0; u < t; ++u)
      if (in.valid[u] && in.slots[u] == slot)
        bad_input(p, "rows " + std::to_string(u) + " and " + std::to_string(t) + " of slot " +
                         std::to_string(slot) +
                         " are not one run of consecutive positions, which a plan with "
                         "sliding-window layers needs");
    const int32_t first = in.positions[t];
    const int32_t from = attended_keys(window, first).begin;
    if (!cache.holds(slot, from, first))
      bad_input(p, "slot " + std::to_string(slot) + ": positions [" + std::to_string(from) + ", " +
                       std::to_string(first) + ") of the sliding window of position " +
                       std::to_string(first) + " are not all filled and in the cache's ring of " +
                       std::to_string(cache.ring_positions()) + " positions");
  }
}

std::span<const float> PlanExecutor::run(const PlanInputs& in, StaticKvCache& cache, uint8_t* arena,
                                         MatmulScratch& scratch, ThreadPool& pool) const {
  check_inputs(in, cache, arena, scratch, pool);
  PlanRun run(model_, comm_, plan_, in, cache, arena, scratch, pool, tp_, moe_, moe_tokens_,
              linear_ ? &*linear_ : nullptr);
  for (const PlanOp& op : plan_.ops) run_op(run, op);
  return {run.f32(plan_.logits_buffer), size_t(plan_.n_logit_rows) * model_.config().n_vocab};
}

}  // namespace kvforge
