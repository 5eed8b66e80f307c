#include "engine/static_pipeline/plan_compiler.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>

#include "core/ops/attention.h"
#include "engine/static_pipeline/memory_planner.h"
#include "engine/static_pipeline/plan_validation.h"
#include "engine/static_pipeline/plan_weights.h"
#include "model/layer_walk.h"
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

// Records the forward pass's walk (model/layer_walk.h) as the plan's ops:
// each step becomes the ops that compute it over `rows` rows, on buffers
// placed in the arena.
class PlanRecorder {
 public:
  PlanRecorder(PlanBuilder& b, const Model& m, Plan& plan)
      : b_(b), m_(m), c_(m.rank_config()), plan_(plan), rows_(plan.rows) {}

  // The mask and row inputs, then x = embeddings and the RoPE angles of each table.
  void embed() {
    const uint64_t r = uint64_t(rows_);
    x_ = b_.buffer("x", r * c_.n_embd * kF32);
    cos_sin_[0] = b_.buffer("rope.cos_sin", r * c_.rope_dim * kF32);
    if (m_.rope_tables().size() > 1)
      cos_sin_[1] = b_.buffer("rope.cos_sin.swa", r * c_.rope_dim * kF32);
    attn_mask_ = b_.buffer("attn_mask", r * uint64_t(plan_.kv_len));
    const bool windows = c_.sliding_window > 0;
    // attend_queries (WindowAttention) needs the larger scratch.
    plan_.attention_scratch_buffer =
        b_.buffer("attn.scratch", uint64_t(plan_.attention_split.size() - 1) *
                                      (windows ? attention_queries_scratch_floats(c_.head_dim)
                                               : attention_scratch_floats(c_.head_dim)) *
                                      kF32);
    if (windows) plan_.row_runs_buffer = b_.buffer("attn.row_runs", r * sizeof(int32_t));
    b_.op(OpCode::UpdateMask, rows_);
    b_.op(OpCode::BuildAttnMask, rows_, WeightRef::None, -1, kNoBuffer, kNoBuffer, attn_mask_);
    if (windows)
      b_.op(OpCode::RowRuns, rows_, WeightRef::None, -1, kNoBuffer, kNoBuffer,
            plan_.row_runs_buffer);
    b_.op(OpCode::Embed, rows_, WeightRef::None, -1, cos_sin_[0], cos_sin_[1], x_);
  }

  void norm(LayerNorm which, int l) {
    const bool attn = which == LayerNorm::Attn;
    xn_ = b_.buffer(prefix(l) + (attn ? "attn_in" : "ffn_in"), uint64_t(rows_) * c_.n_embd * kF32);
    b_.op(OpCode::RmsNorm, rows_, attn ? WeightRef::AttnNorm : WeightRef::FfnNorm, l, x_, kNoBuffer,
          xn_);
  }

  void linear_attention_block(int l) {
    throw std::invalid_argument(c_.arch_name + ": static plans do not record linear-attention " +
                                "layers yet (layer " + std::to_string(l) + ")");
  }

  void attention_block(int l) {
    const uint64_t r = uint64_t(rows_);
    const uint16_t q = b_.buffer(prefix(l) + "q", r * c_.q_dim() * kF32);
    const uint16_t k = b_.buffer(prefix(l) + "k", r * c_.kv_dim() * kF32);
    const uint16_t v = b_.buffer(prefix(l) + "v", r * c_.kv_dim() * kF32);
    b_.op(OpCode::MatMul, rows_, WeightRef::AttnQ, l, xn_, kNoBuffer, q);
    b_.op(OpCode::MatMul, rows_, WeightRef::AttnK, l, xn_, kNoBuffer, k);
    b_.op(OpCode::MatMul, rows_, WeightRef::AttnV, l, xn_, kNoBuffer, v);
    if (c_.qkv_bias) {
      b_.op(OpCode::AddBias, rows_, WeightRef::BiasQ, l, kNoBuffer, kNoBuffer, q);
      b_.op(OpCode::AddBias, rows_, WeightRef::BiasK, l, kNoBuffer, kNoBuffer, k);
      b_.op(OpCode::AddBias, rows_, WeightRef::BiasV, l, kNoBuffer, kNoBuffer, v);
    }
    if (c_.qk_norm) {
      b_.op(OpCode::HeadNorm, rows_, WeightRef::AttnQNorm, l, q, kNoBuffer, q);
      b_.op(OpCode::HeadNorm, rows_, WeightRef::AttnKNorm, l, k, kNoBuffer, k);
    }
    b_.op(OpCode::Rope, rows_, WeightRef::None, l, q, cos_sin_[m_.rope_index(l)], k);
    const uint16_t attn = attention(l, q, k, v);
    proj_ = b_.buffer(prefix(l) + "attn_out", r * c_.n_embd * kF32);
    b_.op(OpCode::MatMul, rows_, WeightRef::AttnOutput, l, attn, kNoBuffer, proj_);
  }

  void residual(LayerNorm post, int l) {
    if (c_.post_norms)
      b_.op(OpCode::RmsNorm, rows_,
            post == LayerNorm::AttnPost ? WeightRef::AttnPostNorm : WeightRef::FfnPostNorm, l,
            proj_, kNoBuffer, proj_);
    b_.op(OpCode::AddInto, rows_, WeightRef::None, l, proj_, kNoBuffer, x_);
  }

  void residual_then_norm(LayerNorm post, int l, LayerNorm next, int next_layer) {
    residual(post, l);
    norm(next, next_layer);
  }

  void ffn_block(int l) {
    const uint64_t r = uint64_t(rows_);
    const uint16_t gate = b_.buffer(prefix(l) + "gate", r * c_.n_ff * kF32);
    const uint16_t up = b_.buffer(prefix(l) + "up", r * c_.n_ff * kF32);
    b_.op(OpCode::MatMul, rows_, WeightRef::FfnGate, l, xn_, kNoBuffer, gate);
    b_.op(OpCode::MatMul, rows_, WeightRef::FfnUp, l, xn_, kNoBuffer, up);
    b_.op(c_.ffn_act == FfnActivation::GeluTanh ? OpCode::GeGlu : OpCode::SwiGlu, rows_,
          WeightRef::None, l, up, kNoBuffer, gate);
    proj_ = b_.buffer(prefix(l) + "ffn_out", r * c_.n_embd * kF32);
    b_.op(OpCode::MatMul, rows_, WeightRef::FfnDown, l, gate, kNoBuffer, proj_);
  }

  // The logit rows gathered, normed, multiplied by the output matrix and soft-capped.
  void output() {
    const int32_t n = plan_.n_logit_rows;
    const uint64_t r = uint64_t(n);
    const uint16_t out_x = b_.buffer("output.x", r * c_.n_embd * kF32);
    b_.op(OpCode::GatherRows, n, WeightRef::None, -1, x_, kNoBuffer, out_x);
    const uint16_t out_norm = b_.buffer("output.norm", r * c_.n_embd * kF32);
    b_.op(OpCode::RmsNorm, n, WeightRef::OutputNorm, -1, out_x, kNoBuffer, out_norm);
    plan_.logits_buffer = b_.buffer("logits", r * c_.n_vocab * kF32);
    b_.op(OpCode::MatMul, n, WeightRef::Output, -1, out_norm, kNoBuffer, plan_.logits_buffer);
    if (c_.final_softcap > 0.0f)
      b_.op(OpCode::SoftCap, n, WeightRef::None, -1, kNoBuffer, kNoBuffer, plan_.logits_buffer);
    b_.keep_to_end(plan_.logits_buffer);
  }

 private:
  static std::string prefix(int l) { return "blk." + std::to_string(l) + "."; }

  // Attention of layer l on q, k, v into a new buffer: full layers write K/V
  // then attend over the mask; a window's ring is written only after its
  // rows attended their staged records (plan.h).
  uint16_t attention(int l, uint16_t q, uint16_t k, uint16_t v) {
    const uint64_t r = uint64_t(rows_);
    const uint16_t attn = b_.buffer(prefix(l) + "attn", r * c_.q_dim() * kF32);
    if (c_.window(l) == 0) {
      b_.op(OpCode::KvWrite, rows_, WeightRef::None, l, k, v);
      b_.op(OpCode::Attention, rows_, WeightRef::None, l, q, attn_mask_, attn);
      return attn;
    }
    const uint16_t staged = b_.buffer(
        prefix(l) + "kv_staged", r * uint64_t(c_.n_kv_head) * 2 * max_kv_record_bytes(c_.head_dim));
    b_.op(OpCode::KvStage, rows_, WeightRef::None, l, k, v, staged);
    b_.op(OpCode::WindowAttention, rows_, WeightRef::None, l, q, staged, attn);
    b_.op(OpCode::KvWrite, rows_, WeightRef::None, l, k, v);
    return attn;
  }

  PlanBuilder& b_;
  const Model& m_;
  const ModelConfig& c_;  // this rank's share (model.rank_config())
  Plan& plan_;
  const int32_t rows_;
  uint16_t x_ = kNoBuffer;                        // [rows][n_embd] the residual stream
  uint16_t xn_ = kNoBuffer;                       // [rows][n_embd] the last norm's output
  uint16_t proj_ = kNoBuffer;                     // [rows][n_embd] the last block's output
  uint16_t cos_sin_[2] = {kNoBuffer, kNoBuffer};  // per RoPE table [rows][rope_dim]
  uint16_t attn_mask_ = kNoBuffer;                // [rows][kv_len]
};

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
  if (c.moe.n_expert > 0)
    throw std::invalid_argument(c.arch_name +
                                ": --static is not supported yet for mixture-of-experts models");
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
  PlanRecorder recorder(b, model, plan);
  walk_forward(model, recorder);
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
