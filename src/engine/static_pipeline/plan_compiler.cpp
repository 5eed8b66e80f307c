#include "engine/static_pipeline/plan_compiler.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>
#include <string>

#include "core/ops/attention.h"
#include "engine/static_pipeline/fingerprint.h"
#include "engine/static_pipeline/memory_planner.h"
#include "engine/static_pipeline/plan_validation.h"
#include "engine/static_pipeline/plan_weights.h"

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
    if (code == OpCode::Attention) touch(plan_.attention_scratch_buffer, index);
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

void emit_layer(PlanBuilder& b, const ModelConfig& c, int l, int32_t rows, uint16_t x,
                uint16_t cos_sin, uint16_t attn_mask) {
  const std::string p = "blk." + std::to_string(l) + ".";
  const uint64_t r = uint64_t(rows);
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
  b.op(OpCode::Rope, rows, WeightRef::None, l, q, cos_sin, k);
  b.op(OpCode::KvWrite, rows, WeightRef::None, l, k, v);
  const uint16_t attn = b.buffer(p + "attn", r * c.q_dim() * kF32);
  b.op(OpCode::Attention, rows, WeightRef::None, l, q, attn_mask, attn);
  const uint16_t attn_out = b.buffer(p + "attn_out", r * c.n_embd * kF32);
  b.op(OpCode::MatMul, rows, WeightRef::AttnOutput, l, attn, kNoBuffer, attn_out);
  b.op(OpCode::AddInto, rows, WeightRef::None, l, attn_out, kNoBuffer, x);

  const uint16_t ffn_in = b.buffer(p + "ffn_in", r * c.n_embd * kF32);
  b.op(OpCode::RmsNorm, rows, WeightRef::FfnNorm, l, x, kNoBuffer, ffn_in);
  const uint16_t gate = b.buffer(p + "gate", r * c.n_ff * kF32);
  const uint16_t up = b.buffer(p + "up", r * c.n_ff * kF32);
  b.op(OpCode::MatMul, rows, WeightRef::FfnGate, l, ffn_in, kNoBuffer, gate);
  b.op(OpCode::MatMul, rows, WeightRef::FfnUp, l, ffn_in, kNoBuffer, up);
  b.op(OpCode::SwiGlu, rows, WeightRef::None, l, up, kNoBuffer, gate);
  const uint16_t ffn_out = b.buffer(p + "ffn_out", r * c.n_embd * kF32);
  b.op(OpCode::MatMul, rows, WeightRef::FfnDown, l, gate, kNoBuffer, ffn_out);
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

// The plan's op set computes the llama block (with qwen2's biases); what the
// other architectures add is refused by name rather than left out.
void check_plan_supports(const ModelConfig& c) {
  std::string missing;
  const auto need = [&](bool used, const char* what) {
    if (used) missing += std::string(missing.empty() ? "" : ", ") + what;
  };
  need(c.qk_norm, "Q/K norms");
  need(c.post_norms, "post-attention/FFN norms");
  need(c.embd_scale != 1.0f, "scaled embeddings");
  need(c.ffn_act != FfnActivation::Silu, "GELU FFN");
  need(c.attn_softcap > 0.0f || c.final_softcap > 0.0f, "soft-capping");
  need(c.sliding_window > 0, "sliding-window attention");
  need(c.attn_scale != 1.0f / std::sqrt(float(c.head_dim)), "a non-default query scale");
  need(c.rope.freq_scale != 1.0f || c.rope.ext_factor != 0.0f || c.rope.attn_factor != 1.0f,
       "scaled RoPE");
  if (!missing.empty())
    throw std::invalid_argument("static pipeline: the " + c.arch_name + " model uses " + missing +
                                ", which static plans do not compute yet (run without --static)");
}

}  // namespace

uint64_t plans_compiled() { return g_plans_compiled.load(); }

Plan compile_plan(const Model& model, PlanKind kind, int32_t rows, int32_t kv_len,
                  int32_t n_logit_rows, int32_t n_threads) {
  const ModelConfig& c = model.config();
  if (rows < 1 || kv_len < 1 || n_logit_rows < 1 || n_logit_rows > rows || n_threads < 1)
    throw std::invalid_argument("compile_plan: rows " + std::to_string(rows) + ", kv_len " +
                                std::to_string(kv_len) + ", logit rows " +
                                std::to_string(n_logit_rows) + ", threads " +
                                std::to_string(n_threads) + " out of range");
  check_plan_supports(c);
  Plan plan;
  plan.kind = kind;
  plan.rows = rows;
  plan.kv_len = kv_len;
  plan.n_logit_rows = n_logit_rows;
  plan.attention_split = split_attention(rows, c.n_head, n_threads);
  PlanBuilder b(plan);
  const uint64_t r = uint64_t(rows);
  const uint16_t x = b.buffer("x", r * c.n_embd * kF32);
  const uint16_t cos_sin = b.buffer("rope.cos_sin", r * c.rope_dim * kF32);
  const uint16_t attn_mask = b.buffer("attn_mask", r * uint64_t(kv_len));
  plan.attention_scratch_buffer =
      b.buffer("attn.scratch", uint64_t(n_threads) * attention_scratch_floats(c.head_dim) * kF32);

  b.op(OpCode::UpdateMask, rows);
  b.op(OpCode::BuildAttnMask, rows, WeightRef::None, -1, kNoBuffer, kNoBuffer, attn_mask);
  b.op(OpCode::Embed, rows, WeightRef::None, -1, cos_sin, kNoBuffer, x);
  for (int l = 0; l < c.n_layer; ++l) emit_layer(b, c, l, rows, x, cos_sin, attn_mask);

  const uint64_t n_out = uint64_t(n_logit_rows);
  const uint16_t out_x = b.buffer("output.x", n_out * c.n_embd * kF32);
  b.op(OpCode::GatherRows, n_logit_rows, WeightRef::None, -1, x, kNoBuffer, out_x);
  const uint16_t out_norm = b.buffer("output.norm", n_out * c.n_embd * kF32);
  b.op(OpCode::RmsNorm, n_logit_rows, WeightRef::OutputNorm, -1, out_x, kNoBuffer, out_norm);
  plan.logits_buffer = b.buffer("logits", n_out * c.n_vocab * kF32);
  b.op(OpCode::MatMul, n_logit_rows, WeightRef::Output, -1, out_norm, kNoBuffer,
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
  set.prefill =
      compile_plan(model, PlanKind::Prefill, config.prefill_chunk, config.capacity(), 1, n_threads);
  for (int32_t kv_len : config.generate_variants)
    set.generate.push_back(
        compile_plan(model, PlanKind::Generate, config.slots, kv_len, config.slots, n_threads));
  return set;
}

}  // namespace kvforge
