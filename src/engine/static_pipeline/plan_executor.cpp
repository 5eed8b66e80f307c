#include "engine/static_pipeline/plan_executor.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/formats/row_codec.h"
#include "core/ops/attention.h"
#include "core/ops/norm.h"
#include "engine/static_pipeline/plan_weights.h"

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
          TpExchange& tp)
      : m_(model),
        comm_(comm),
        c_(model.rank_config()),
        p_(plan),
        in_(in),
        cache_(cache),
        arena_(arena),
        scratch_(scratch),
        pool_(pool),
        tp_(tp) {}

  float* f32(uint16_t b) const { return reinterpret_cast<float*>(arena_ + p_.buffers[b].offset); }
  uint8_t* bytes(uint16_t b) const { return arena_ + p_.buffers[b].offset; }

  void update_mask() {
    for (int32_t t = 0; t < p_.rows; ++t)
      if (in_.valid[t]) cache_.mask(in_.slots[t])[in_.positions[t]] = 1;
  }

  // A row attends to the filled positions of its slot up to its own position
  // (causal within a prefill chunk); padding rows attend to nothing.
  void build_attn_mask(const PlanOp& op) {
    const int32_t kv = p_.kv_len;
    for (int32_t t = 0; t < p_.rows; ++t) {
      uint8_t* row = bytes(op.dst) + size_t(t) * size_t(kv);
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
  void row_runs(const PlanOp& op) {
    int32_t* runs = reinterpret_cast<int32_t*>(bytes(op.dst));
    for (int32_t t = 0; t < p_.rows; ++t)
      runs[t] = !in_.valid[t] ? -1 : continues_run(in_, t) ? runs[t - 1] : t;
  }

  void embed(const PlanOp& op) {
    const std::vector<RopeTable>& tables = m_.rope_tables();
    for (int32_t t = 0; t < p_.rows; ++t) {
      embed_token(m_, in_.tokens[t], f32(op.dst) + size_t(t) * c_.n_embd);
      tables[0].angles(in_.positions[t], f32(op.src0) + size_t(t) * c_.rope_dim);
      if (op.src1 != kNoBuffer)
        tables[1].angles(in_.positions[t], f32(op.src1) + size_t(t) * c_.rope_dim);
    }
  }

  void rms_norm_rows(const PlanOp& op, const std::vector<float>& w) {
    for (int32_t t = 0; t < op.rows; ++t)
      rms_norm(f32(op.src0) + size_t(t) * c_.n_embd, w.data(), c_.n_embd, c_.rms_eps,
               f32(op.dst) + size_t(t) * c_.n_embd);
  }

  // Q/K norms: every head of every row, in place.
  void head_norm_rows(const PlanOp& op, const std::vector<float>& w) {
    const int heads = op.weight == WeightRef::AttnQNorm ? c_.n_head : c_.n_kv_head;
    const size_t row = size_t(heads) * size_t(c_.head_dim);
    if (op.src0 != op.dst)
      std::memcpy(f32(op.dst), f32(op.src0), sizeof(float) * row * size_t(op.rows));
    for (int32_t t = 0; t < op.rows; ++t) norm_heads(c_, f32(op.dst) + size_t(t) * row, heads, w);
  }

  void add_bias_rows(const PlanOp& op, const std::vector<float>& bias) {
    add_bias(f32(op.dst), bias, op.rows);
  }

  void rope(const PlanOp& op) {
    for (int32_t t = 0; t < op.rows; ++t)
      rope_token(m_, op.layer, f32(op.src0) + size_t(t) * c_.q_dim(),
                 f32(op.dst) + size_t(t) * c_.kv_dim(), f32(op.src1) + size_t(t) * c_.rope_dim);
  }

  void kv_write(const PlanOp& op) {
    for (int32_t t = 0; t < op.rows; ++t)
      if (in_.valid[t])
        cache_.write(op.layer, in_.slots[t], in_.positions[t],
                     f32(op.src0) + size_t(t) * c_.kv_dim(),
                     f32(op.src1) + size_t(t) * c_.kv_dim());
  }

  // Every row's K and V as the cache's head records ([rows][n_kv_head] K
  // records, then V's), the bytes a KvWrite would store.
  void kv_stage(const PlanOp& op) {
    const KvFormat format = cache_.format();
    const size_t kb = kv_head_bytes(format.k, c_.head_dim),
                 vb = kv_head_bytes(format.v, c_.head_dim);
    uint8_t* k_records = bytes(op.dst);
    uint8_t* v_records = k_records + size_t(op.rows) * size_t(c_.n_kv_head) * kb;
    for (int32_t t = 0; t < op.rows; ++t)
      for (int h = 0; h < c_.n_kv_head; ++h) {
        const size_t at = size_t(t) * size_t(c_.kv_dim()) + size_t(h) * size_t(c_.head_dim);
        const size_t record = size_t(t) * size_t(c_.n_kv_head) + size_t(h);
        kv_encode_head(format.k, f32(op.src0) + at, k_records + record * kb, c_.head_dim);
        kv_encode_head(format.v, f32(op.src1) + at, v_records + record * vb, c_.head_dim);
      }
  }

  // Sliding-window attention: row t at position p attends (p - window, p],
  // which are the positions before its run in the cache's ring (not yet
  // overwritten: the run's K/V are written after this op) and then its
  // run's staged records up to itself. One query head per item, as the
  // plan split them; attend_queries over exactly those positions gives the
  // dynamic forward pass's bits.
  void window_attention(const PlanOp& op) {
    const int32_t window = c_.window(op.layer);
    const KvFormat format = cache_.format();
    const size_t kb = kv_head_bytes(format.k, c_.head_dim),
                 vb = kv_head_bytes(format.v, c_.head_dim);
    const uint8_t* k_records = bytes(op.src1);
    const uint8_t* v_records = k_records + size_t(p_.rows) * size_t(c_.n_kv_head) * kb;
    const int32_t* runs = reinterpret_cast<const int32_t*>(bytes(p_.row_runs_buffer));
    const size_t per_thread = attention_queries_scratch_floats(c_.head_dim);
    const Scoring scoring{c_.attn_scale, c_.attn_softcap};
    const size_t q_dim = size_t(c_.q_dim());
    pool_.run([&](int ti, int) {
      float* scratch = f32(p_.attention_scratch_buffer) + size_t(ti) * per_thread;
      for (int32_t item = p_.attention_split[size_t(ti)]; item < p_.attention_split[size_t(ti) + 1];
           ++item) {
        const int32_t t = item / c_.n_head;
        const int h = item % c_.n_head;
        float* out = f32(op.dst) + size_t(t) * q_dim + size_t(h) * c_.head_dim;
        if (!in_.valid[t]) {
          std::fill(out, out + c_.head_dim, 0.0f);
          continue;
        }
        const int32_t pos = in_.positions[t];
        const int32_t run = runs[t];
        const int32_t run_first = in_.positions[run];  // the run's positions: [run_first, pos]
        const KeyRange keys = attended_keys(window, pos);
        KvSpan spans[3];
        const int n_cached =
            keys.begin < run_first
                ? cache_.ring_spans(op.layer, in_.slots[t], keys.begin, run_first, spans)
                : 0;
        KvSpan& staged = spans[n_cached];
        staged.k = k_records + size_t(run) * size_t(c_.n_kv_head) * kb;
        staged.v = v_records + size_t(run) * size_t(c_.n_kv_head) * vb;
        staged.k_pos_stride = size_t(c_.n_kv_head) * kb;
        staged.k_head_stride = kb;
        staged.v_pos_stride = size_t(c_.n_kv_head) * vb;
        staged.v_head_stride = vb;
        staged.n = pos - run_first + 1;
        const KvView kv{spans, size_t(n_cached) + 1, std::min(keys.begin, run_first)};
        attend_queries(f32(op.src0) + size_t(t) * q_dim + size_t(h) * c_.head_dim, q_dim, 1, &keys,
                       1, kv, h / c_.gqa_group(), c_.head_dim, format, scoring, out, q_dim,
                       scratch);
      }
    });
  }

  // Over the plan's whole KV length, with the mask; items split over threads
  // as the plan fixed them.
  void attention(const PlanOp& op) {
    const float scale = c_.attn_scale;
    const size_t per_thread = attention_scratch_floats(c_.head_dim);
    const KvFormat format = cache_.format();
    pool_.run([&](int ti, int) {
      float* scratch = f32(p_.attention_scratch_buffer) + size_t(ti) * per_thread;
      for (int32_t item = p_.attention_split[size_t(ti)]; item < p_.attention_split[size_t(ti) + 1];
           ++item) {
        const int32_t t = item / c_.n_head;
        const int h = item % c_.n_head;
        float* out = f32(op.dst) + size_t(t) * c_.q_dim() + size_t(h) * c_.head_dim;
        if (!in_.valid[t]) {  // a padding row: nothing to attend to
          std::fill(out, out + c_.head_dim, 0.0f);
          continue;
        }
        const KvSpan span = cache_.span(op.layer, in_.slots[t], p_.kv_len);
        attend_one_head(f32(op.src0) + size_t(t) * c_.q_dim() + size_t(h) * c_.head_dim, &span, 1,
                        p_.kv_len, h / c_.gqa_group(), c_.head_dim, format, scale, out, scratch,
                        bytes(op.src1) + size_t(t) * size_t(p_.kv_len), c_.attn_softcap);
      }
    });
  }

  void add_into(const PlanOp& op) {
    const size_t n = size_t(op.rows) * c_.n_embd;
    float* x = f32(op.dst);
    const float* y = f32(op.src0);
    for (size_t i = 0; i < n; ++i) x[i] += y[i];
  }

  // SwiGlu and GeGlu: validation made sure the op is the model's gate.
  void gated_rows(const PlanOp& op) {
    gated_activation(c_, f32(op.dst), f32(op.src0), int64_t(op.rows) * c_.n_ff);
  }

  void soft_cap(const PlanOp& op) {
    soft_cap_logits(c_, f32(op.dst), int64_t(op.rows) * c_.n_vocab);
  }

  void gather_rows(const PlanOp& op) {
    for (int32_t i = 0; i < op.rows; ++i)
      std::memcpy(f32(op.dst) + size_t(i) * c_.n_embd,
                  f32(op.src0) + size_t(in_.logit_rows[i]) * c_.n_embd, sizeof(float) * c_.n_embd);
  }

  void matmul_rows(const PlanOp& op, const PlanMatrix& w) {
    if (m_.tp() > 1 && op.weight == WeightRef::Output)
      output_rows(op, *w.whole);
    else if (w.whole)
      matmul(*w.whole, f32(op.src0), op.rows, f32(op.dst), pool_, scratch_);
    else
      row_parallel_matmul(
          m_.split(), comm_, *w.parts,
          op.weight == WeightRef::AttnOutput ? m_.split().attn_parts : m_.split().ffn_parts,
          f32(op.src0), op.rows, f32(op.dst), tp_, pool_, scratch_, nullptr);
  }

  // Tensor parallel: this rank's vocabulary rows of the logits, every rank's
  // gathered and laid out as [rows][n_vocab].
  void output_rows(const PlanOp& op, const WeightView& w) {
    const TensorSplit& s = m_.split();
    matmul(w, f32(op.src0), op.rows, vocab_slice(s, op.rows, c_.n_vocab, 0, tp_), pool_, scratch_);
    gather_vocab_logits(s, comm_, op.rows, c_.n_vocab, tp_, f32(op.dst), nullptr);
  }

 private:
  const Model& m_;
  Communicator& comm_;
  const ModelConfig& c_;
  const Plan& p_;
  const PlanInputs& in_;
  StaticKvCache& cache_;
  uint8_t* arena_;
  MatmulScratch& scratch_;
  ThreadPool& pool_;
  TpExchange& tp_;
};

// One op of a plan: the PlanRun method of its code. `matrix` and `vec` are
// the op's weights, resolved when the executor was built.
void run_op(PlanRun& run, const PlanOp& op, const PlanMatrix& matrix,
            const std::vector<float>* vec) {
  switch (op.code) {
    case OpCode::UpdateMask:
      return run.update_mask();
    case OpCode::BuildAttnMask:
      return run.build_attn_mask(op);
    case OpCode::Embed:
      return run.embed(op);
    case OpCode::RmsNorm:
      return run.rms_norm_rows(op, *vec);
    case OpCode::MatMul:
      return run.matmul_rows(op, matrix);
    case OpCode::AddBias:
      return run.add_bias_rows(op, *vec);
    case OpCode::Rope:
      return run.rope(op);
    case OpCode::KvWrite:
      return run.kv_write(op);
    case OpCode::Attention:
      return run.attention(op);
    case OpCode::AddInto:
      return run.add_into(op);
    case OpCode::SwiGlu:
    case OpCode::GeGlu:
      return run.gated_rows(op);
    case OpCode::GatherRows:
      return run.gather_rows(op);
    case OpCode::HeadNorm:
      return run.head_norm_rows(op, *vec);
    case OpCode::SoftCap:
      return run.soft_cap(op);
    case OpCode::RowRuns:
      return run.row_runs(op);
    case OpCode::KvStage:
      return run.kv_stage(op);
    case OpCode::WindowAttention:
      return run.window_attention(op);
  }
}

[[noreturn]] void bad_input(const Plan& p, const std::string& what) {
  throw std::invalid_argument("plan " + p.label() + ": " + what);
}

}  // namespace

PlanExecutor::PlanExecutor(const Model& model, Communicator& comm, const Plan& plan,
                           int32_t n_threads)
    : model_(model), comm_(comm), plan_(plan), n_threads_(n_threads) {
  ops_.reserve(plan.ops.size());
  for (const PlanOp& op : plan.ops) {
    ResolvedOp r{op, {}, nullptr};
    if (op.code == OpCode::MatMul) r.matrix = weight_matrix(model, op.weight, op.layer);
    if (op.code == OpCode::RmsNorm || op.code == OpCode::AddBias || op.code == OpCode::HeadNorm)
      r.vec = &weight_vector(model, op.weight, op.layer);
    ops_.push_back(r);
  }
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
  PlanRun run(model_, comm_, plan_, in, cache, arena, scratch, pool, tp_);
  for (const ResolvedOp& r : ops_) run_op(run, r.op, r.matrix, r.vec);
  return {run.f32(plan_.logits_buffer), size_t(plan_.n_logit_rows) * model_.config().n_vocab};
}

}  // namespace kvforge
