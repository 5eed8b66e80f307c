#include "engine/static_pipeline/plan_compiler.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>

#include "core/ops/attention.h"
#include "engine/static_pipeline/memory_planner.h"
#include "engine/static_pipeline/plan_validation.h"
#include "engine/static_pipeline/plan_weights.h"
#include "model/model_fingerprint.h"

namespace kvforge {
namespace {

std::atomic<uint64_t> g_plans_compiled{0};

// Emits ops and buffers in program order, tracking each buffer's lifetime.
class PlanBuilder {
 public:
  explicit PlanBuilder(Plan& plan) : plan_(plan) {}

  uint16_t buffer(std::string name, uint64_t bytes) {
    if (plan_.buffers.size() >= kNoBuffer) throw std::length_error("plan: too many buffers");
    plan_.buffers.push_back({std::move(name), 0, bytes});
    lifetimes_.push_back({bytes, -1, -1});
    return uint16_t(plan_.buffers.size() - 1);
  }

  void op(OpCode code, int32_t rows, WeightRef weight = WeightRef::None, int layer = -1,
          uint16_t src0 = kNoBuffer, uint16_t src1 = kNoBuffer, uint16_t dst = kNoBuffer) {
    const int32_t index = int32_t(plan_.ops.size());
    plan_.ops.push_back({code, weight, int16_t(layer), rows, src0, src1, dst});
    for (uint16_t b : {src0, src1, dst}) touch(b, index);
    if (code == OpCode::Attention || code == OpCode::WindowAttention)
      touch(plan_.attention_scratch_buffer, index);
    if (code == OpCode::WindowAttention) touch(plan_.row_runs_buffer, index);
  }

  // Outputs stay alive past the last op, so nothing is placed over them.
  void keep_to_end(uint16_t b) { lifetimes_[b].last_op = int32_t(plan_.ops.size()); }

  void place() {
    const ArenaLayout layout = plan_arena(lifetimes_);
    for (size_t i = 0; i < plan_.buffers.size(); ++i) plan_.buffers[i].offset = layout.offsets[i];
    plan_.arena_bytes = layout.arena_bytes;
  }

 private:
  void touch(uint16_t b, int32_t index) {
    if (b == kNoBuffer) return;
    BufferLifetime& lt = lifetimes_[b];
    if (lt.first_op < 0) lt.first_op = index;
    lt.last_op = std::max(lt.last_op, index);
  }

  Plan& plan_;
  std::vector<BufferLifetime> lifetimes_;
};

constexpr uint64_t kF32 = sizeof(float);

// The buffers every layer shares.
struct LayerInputs {
  uint16_t x = kNoBuffer;                        // [rows][n_embd] the residual stream
  uint16_t cos_sin[2] = {kNoBuffer, kNoBuffer};  // per RoPE table [rows][rope_dim]
  uint16_t attn_mask = kNoBuffer;                // [rows][kv_len]
};

// Attention of layer l on q, k, v ([rows][q_dim], [rows][kv_dim] ×2) into a new buffer.
uint16_t emit_attention(PlanBuilder& b, const ModelConfig& c, int l, int32_t rows,
                        const LayerInputs& in, uint16_t q, uint16_t k, uint16_t v) {
  const std::string p = "blk." + std::to_string(l) + ".";
  const uint64_t r = uint64_t(rows);
  const uint16_t attn = b.buffer(p + "attn", r * c.q_dim() * kF32);
  if (c.window(l) == 0) {
    b.op(OpCode::KvWrite, rows, WeightRef::None, l, k, v);
    b.op(OpCode::Attention, rows, WeightRef::None, l, q, in.attn_mask, attn);
    return attn;
  }
  const uint16_t staged =
      b.buffer(p + "kv_staged", r * uint64_t(c.n_kv_head) * 2 * max_kv_record_bytes(c.head_dim));
  b.op(OpCode::KvStage, rows, WeightRef::None, l, k, v, staged);
  b.op(OpCode::WindowAttention, rows, WeightRef::None, l, q, staged, attn);
  b.op(OpCode::KvWrite, rows, WeightRef::None, l, k, v);
  return attn;
}

void emit_layer(PlanBuilder& b, const Model& m, int l, int32_t rows, const LayerInputs& in) {
  const ModelConfig& c = m.rank_config();
  const std::string p = "blk." + std::to_string(l) + ".";
  const uint64_t r = uint64_t(rows);
  const uint16_t x = in.x;
  const uint16_t attn_in = b.buffer(p + "attn_in", r * c.n_embd * kF32);
  b.op(OpCode::RmsNorm, rows, WeightRef::AttnNorm, l, x, kNoBuffer, attn_in);
  const uint16_t q = b.buffer(p + "q", r * c.q_dim() * kF32);
  const uint16_t k = b.buffer(p + "k", r * c.kv_dim() * kF32);
  const uint16_t v = b.buffer(p + "v", r * c.kv_dim() * kF32);
  b.op(OpCode::MatMul, rows, WeightRef::AttnQ, l, attn_in, kNoBuffer, q);
  b.op(OpCode::MatMul, rows, WeightRef::AttnK, l, attn_in, kNoBuffer, k);
  b.op(OpCode::MatMul, rows, WeightRef::AttnV, l, attn_in, kNoBuffer, v);
  if (c.qkv_bias) {
    b.op(OpCode::AddBias, rows, WeightRef::BiasQ, l, kNoBuffer, kNoBuffer, q);
    b.op(OpCode::AddBias, rows, WeightRef::BiasK, l, kNoBuffer, kNoBuffer, k);
    b.op(OpCode::AddBias, rows, WeightRef::BiasV, l, kNoBuffer, kNoBuffer, v);
  }
  if (c.qk_norm) {
    b.op(OpCode::HeadNorm, rows, WeightRef::AttnQNorm, l, q, kNoBuffer, q);
    b.op(OpCode::HeadNorm, rows, WeightRef::AttnKNorm, l, k, kNoBuffer, k);
  }
  b.op(OpCode::Rope, rows, WeightRef::None, l, q, in.cos_sin[m.rope_index(l)], k);
  const uint16_t attn = emit_attention(b, c, l, rows, in, q, k, v);
  const uint16_t attn_out = b.buffer(p + "attn_out", r * c.n_embd * kF32);
  b.op(OpCode::MatMul, rows, WeightRef::AttnOutput, l, attn, kNoBuffer, attn_out);
  if (c.post_norms)
    b.op(OpCode::RmsNorm, rows, WeightRef::AttnPostNorm, l, attn_out, kNoBuffer, attn_out);
  b.op(OpCode::AddInto, rows, WeightRef::None, l, attn_out, kNoBuffer, x);

  const uint16_t ffn_in = b.buffer(p + "ffn_in", r * c.n_embd * kF32);
  b.op(OpCode::RmsNorm, rows, WeightRef::FfnNorm, l, x, kNoBuffer, ffn_in);
  const uint16_t gate = b.buffer(p + "gate", r * c.n_ff * kF32);
  const uint16_t up = b.buffer(p + "up", r * c.n_ff * kF32);
  b.op(OpCode::MatMul, rows, WeightRef::FfnGate, l, ffn_in, kNoBuffer, gate);
  b.op(OpCode::MatMul, rows, WeightRef::FfnUp, l, ffn_in, kNoBuffer, up);
  b.op(c.ffn_act == FfnActivation::GeluTanh ? OpCode::GeGlu : OpCode::SwiGlu, rows, WeightRef::None,
       l, up, kNoBuffer, gate);
  const uint16_t ffn_out = b.buffer(p + "ffn_out", r * c.n_embd * kF32);
  b.op(OpCode::MatMul, rows, WeightRef::FfnDown, l, gate, kNoBuffer, ffn_out);
  if (c.post_norms)
    b.op(OpCode::RmsNorm, rows, WeightRef::FfnPostNorm, l, ffn_out, kNoBuffer, ffn_out);
  b.op(OpCode::AddInto, rows, WeightRef::None, l, ffn_out, kNoBuffer, x);
}

// Attention items (row, query head) split evenly over the threads, fixed now
// so that every run of the plan hands each thread the same work.
std::vector<int32_t> split_attention(int32_t rows, int n_head, int32_t n_threads) {
  const int64_t items = int64_t(rows) * n_head;
  std::vector<int32_t> split(size_t(n_threads) + 1);
  for (int32_t i = 0; i <= n_threads; ++i) split[size_t(i)] = int32_t(items * i / n_threads);
  return split;
}

}  // namespace

uint64_t plans_compiled() { return g_plans_compiled.load(); }

Plan compile_plan(const Model& model, PlanKind kind, int32_t rows, int32_t kv_len,
                  int32_t n_logit_rows, int32_t n_threads) {
  // This rank's heads and FFN rows (all of them on one process); the logits
  // buffer holds the whole vocabulary (rank_config keeps n_vocab).
  const ModelConfig& c = model.rank_config();
  if (rows < 1 || kv_len < 1 || n_logit_rows < 1 || n_logit_rows > rows || n_threads < 1)
    throw std::invalid_argument("compile_plan: rows " + std::to_string(rows) + ", kv_len " +
                                std::to_string(kv_len) + ", logit rows " +
                                std::to_string(n_logit_rows) + ", threads " +
                                std::to_string(n_threads) + " out of range");
  Plan plan;
  plan.kind = kind;
  plan.rows = rows;
  plan.kv_len = kv_len;
  plan.n_logit_rows = n_logit_rows;
  plan.attention_split = split_attention(rows, c.n_head, n_threads);
  PlanBuilder b(plan);
  const uint64_t r = uint64_t(rows);
  const bool windows = c.sliding_window > 0;
  LayerInputs in;
  in.x = b.buffer("x", r * c.n_embd * kF32);
  in.cos_sin[0] = b.buffer("rope.cos_sin", r * c.rope_dim * kF32);
  if (model.rope_tables().size() > 1)
    in.cos_sin[1] = b.buffer("rope.cos_sin.swa", r * c.rope_dim * kF32);
  in.attn_mask = b.buffer("attn_mask", r * uint64_t(kv_len));
  // attend_queries (WindowAttention) needs the larger scratch.
  plan.attention_scratch_buffer =
      b.buffer("attn.scratch", uint64_t(n_threads) *
                                   (windows ? attention_queries_scratch_floats(c.head_dim)
                                            : attention_scratch_floats(c.head_dim)) *
                                   kF32);
  if (windows) plan.row_runs_buffer = b.buffer("attn.row_runs", r * sizeof(int32_t));

  b.op(OpCode::UpdateMask, rows);
  b.op(OpCode::BuildAttnMask, rows, WeightRef::None, -1, kNoBuffer, kNoBuffer, in.attn_mask);
  if (windows)
    b.op(OpCode::RowRuns, rows, WeightRef::None, -1, kNoBuffer, kNoBuffer, plan.row_runs_buffer);
  b.op(OpCode::Embed, rows, WeightRef::None, -1, in.cos_sin[0], in.cos_sin[1], in.x);
  for (int l = 0; l < c.n_layer; ++l) emit_layer(b, model, l, rows, in);

  const uint64_t n_out = uint64_t(n_logit_rows);
  const uint16_t out_x = b.buffer("output.x", n_out * c.n_embd * kF32);
  b.op(OpCode::GatherRows, n_logit_rows, WeightRef::None, -1, in.x, kNoBuffer, out_x);
  const uint16_t out_norm = b.buffer("output.norm", n_out * c.n_embd * kF32);
  b.op(OpCode::RmsNorm, n_logit_rows, WeightRef::OutputNorm, -1, out_x, kNoBuffer, out_norm);
  plan.logits_buffer = b.buffer("logits", n_out * c.n_vocab * kF32);
  b.op(OpCode::MatMul, n_logit_rows, WeightRef::Output, -1, out_norm, kNoBuffer,
       plan.logits_buffer);
  if (c.final_softcap > 0.0f)
    b.op(OpCode::SoftCap, n_logit_rows, WeightRef::None, -1, kNoBuffer, kNoBuffer,
         plan.logits_buffer);
  b.keep_to_end(plan.logits_buffer);
  b.place();

  for (const PlanOp& op : plan.ops)
    if (op.code == OpCode::MatMul)
      plan.matmul_scratch_bytes = std::max<uint64_t>(
          plan.matmul_scratch_bytes,
          matmul_scratch_bytes(weight_matrix(model, op.weight, op.layer), op.rows));
  validate_plan(plan, model, n_threads);  // the compiler holds itself to the loader's rules
  ++g_plans_compiled;
  return plan;
}

PlanSet compile_plans(const Model& model, const StaticConfig& config, int32_t n_threads) {
  config.validate();
  PlanSet set;
  set.config = config;
  set.n_threads = n_threads;
  set.model_fingerprint = model_fingerprint(model);
  set.layer_windows = layer_windows(model.config());
  set.prefill =
      compile_plan(model, PlanKind::Prefill, config.prefill_chunk, config.capacity(), 1, n_threads);
  for (int32_t kv_len : config.generate_variants)
    set.generate.push_back(
        compile_plan(model, PlanKind::Generate, config.slots, kv_len, config.slots, n_threads));
  return set;
}

}  // namespace kvforge
