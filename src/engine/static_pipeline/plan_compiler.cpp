#include "engine/static_pipeline/plan_compiler.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/ops/attention.h"
#include "engine/static_pipeline/memory_planner.h"
#include "engine/static_pipeline/plan_validation.h"
#include "model/layer_walk.h"
#include "model/model_fingerprint.h"

namespace kvforge {
namespace {

std::atomic<uint64_t> g_plans_compiled{0};

// Emits ops and buffers in program order, tracking each buffer's lifetime.
class PlanBuilder {
 public:
  PlanBuilder(Plan& plan, const Model& model) : plan_(plan), model_(model) {}

  // A buffer of the role's size (plan_validation.h).
  uint16_t buffer(std::string name, BufferRole role) {
    return buffer(role_bytes(plan_, model_.rank_config(), role), std::move(name));
  }
  uint16_t buffer(uint64_t bytes, std::string name) {
    if (plan_.buffers.size() >= kNoBuffer) throw std::length_error("plan: too many buffers");
    plan_.buffers.push_back({std::move(name), 0, bytes});
    lifetimes_.push_back({bytes, -1, -1});
    return uint16_t(plan_.buffers.size() - 1);
  }

  void op(PlanOp op) {
    const int32_t index = int32_t(plan_.ops.size());
    op.rows = op.code == OpCode::Logits ? plan_.n_logit_rows : plan_.rows;
    plan_.ops.push_back(op);
    for (uint16_t b : op.buffers) touch(b, index);
    if (op.code == OpCode::Attend || op.code == OpCode::WindowAttend)
      touch(plan_.attention_scratch_buffer, index);
    if (op.code == OpCode::WindowAttend || op.code == OpCode::Masks)
      touch(plan_.row_runs_buffer, index);
    plan_.matmul_scratch_bytes =
        std::max<uint64_t>(plan_.matmul_scratch_bytes, op_matmul_scratch_bytes(model_, op));
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
  const Model& model_;
  std::vector<BufferLifetime> lifetimes_;
};

// Records the forward pass's walk (model/layer_walk.h) as the plan's ops,
// one op per step, on buffers placed in the arena by role.
class PlanRecorder {
 public:
  PlanRecorder(PlanBuilder& b, const Model& m, Plan& plan)
      : b_(b), m_(m), c_(m.rank_config()), plan_(plan), window_kv_(size_t(c_.n_layer)) {}

  // The masks, then x = embeddings and the RoPE angles of each table.
  void embed() {
    x_ = b_.buffer("x", BufferRole::X);
    cos_sin_[0] = b_.buffer("rope.cos_sin", BufferRole::CosSin);
    if (m_.rope_tables().size() > 1)
      cos_sin_[1] = b_.buffer("rope.cos_sin.swa", BufferRole::CosSin);
    attn_mask_ = b_.buffer("attn_mask", BufferRole::AttnMask);
    plan_.attention_scratch_buffer = b_.buffer(attention_scratch_bytes(plan_, c_), "attn.scratch");
    if (c_.sliding_window > 0)
      plan_.row_runs_buffer = b_.buffer(uint64_t(plan_.rows) * sizeof(int32_t), "attn.row_runs");
    if (c_.n_embd_per_layer > 0)
      per_layer_ = b_.buffer("per_layer_inputs", BufferRole::PerLayerInputs);
    b_.op({.code = OpCode::Masks, .buffers = operands({attn_mask_})});
    b_.op({.code = OpCode::Embed, .buffers = operands({x_, cos_sin_[0], cos_sin_[1], per_layer_})});
  }
  // Gemma 4: x += the layer's per-layer embedding projection, x *= its output scale.
  void layer_tail(int l) {
    proj_ = b_.buffer(prefix(l) + "per_layer_out", BufferRole::Proj);
    const uint16_t gate = c_.n_embd_per_layer > 0
                              ? b_.buffer(prefix(l) + "per_layer_gate", BufferRole::PerLayerGate)
                              : kNoBuffer;
    b_.op({.code = OpCode::LayerTail,
           .layer = int16_t(l),
           .buffers = operands({x_, proj_, per_layer_, gate})});
  }
  void norm(LayerNorm which, int l) {
    xn_ = b_.buffer(prefix(l) + (which == LayerNorm::Attn ? "attn_in" : "ffn_in"), BufferRole::Xn);
    b_.op({.code = OpCode::Norm,
           .norm = uint8_t(which),
           .layer = int16_t(l),
           .buffers = operands({x_, xn_})});
  }
  void linear_attention_block(int l) {
    proj_ = b_.buffer(prefix(l) + "linear_out", BufferRole::Proj);
    b_.op(
        {.code = OpCode::LinearAttention, .layer = int16_t(l), .buffers = operands({xn_, proj_})});
  }
  void attention_input(int l) {
    q_ = b_.buffer(prefix(l) + "q", BufferRole::Q);
    k_ = b_.buffer(prefix(l) + "k", BufferRole::K);
    v_ = b_.buffer(prefix(l) + "v", BufferRole::V);
    gate_ = c_.attn_gate ? b_.buffer(prefix(l) + "attn_gate", BufferRole::AttnGate) : kNoBuffer;
    b_.op({.code = OpCode::AttentionIn,
           .layer = int16_t(l),
           .buffers = operands({xn_, cos_sin_[m_.rope_index(l)], q_, k_, v_, gate_})});
  }
  // Full layers write K/V then attend over the mask; a window's ring is
  // written only after its rows attended their staged records (plan.h). A
  // shared layer (gemma4) attends over its source layer's K/V: a window's
  // through the source's staged records, whose K/V its op may write.
  void attend(int l) {
    attn_ = b_.buffer(prefix(l) + "attn", BufferRole::Attn);
    const int src = c_.kv_source(l);
    if (c_.window(l) == 0) {
      const bool own = src == l;
      return b_.op({.code = OpCode::Attend,
                    .layer = int16_t(l),
                    .buffers = operands(
                        {q_, own ? k_ : kNoBuffer, own ? v_ : kNoBuffer, attn_mask_, attn_})});
    }
    KvOperands& kv = window_kv_[size_t(src)];
    if (src == l) kv = {k_, v_, b_.buffer(prefix(l) + "kv_staged", BufferRole::Staged)};
    b_.op({.code = OpCode::WindowAttend,
           .layer = int16_t(l),
           .buffers = operands({q_, kv.k, kv.v, kv.staged, attn_})});
  }
  void attention_output(int l) {
    proj_ = b_.buffer(prefix(l) + "attn_out", BufferRole::Proj);
    b_.op({.code = OpCode::AttentionOut,
           .layer = int16_t(l),
           .buffers = operands({attn_, proj_, gate_})});
  }
  void residual_then_norm(LayerNorm post, int l, LayerNorm next, int next_layer) {
    xn_ = b_.buffer(prefix(next_layer) + (next == LayerNorm::Attn ? "attn_in" : "ffn_in"),
                    BufferRole::Xn);
    b_.op({.code = OpCode::ResidualNorm,
           .norm = uint8_t(post),
           .next_norm = uint8_t(next),
           .layer = int16_t(l),
           .next_layer = int16_t(next_layer),
           .buffers = operands({proj_, x_, xn_})});
  }
  void residual(LayerNorm post, int l) {
    b_.op({.code = OpCode::ResidualNorm,
           .norm = uint8_t(post),
           .layer = int16_t(l),
           .buffers = operands({proj_, x_})});
  }
  // A mixture of experts records one op: its routing scratch is the
  // executor's. Gemma 4's runs beside a dense FFN (model/gemma4_moe.h): the
  // op also reads x and has the dense FFN's gate and up rows.
  void ffn_block(int l) {
    const bool dense = c_.moe.n_expert == 0 || c_.experts_beside_ffn();
    const uint16_t gate = dense ? b_.buffer(prefix(l) + "gate", BufferRole::Gate) : kNoBuffer;
    const uint16_t up = dense ? b_.buffer(prefix(l) + "up", BufferRole::Up) : kNoBuffer;
    proj_ = b_.buffer(prefix(l) + "ffn_out", BufferRole::Proj);
    if (c_.moe.n_expert == 0)
      return b_.op(
          {.code = OpCode::Ffn, .layer = int16_t(l), .buffers = operands({xn_, gate, up, proj_})});
    const uint16_t x = c_.experts_beside_ffn() ? x_ : kNoBuffer;
    b_.op({.code = OpCode::MoeFfn,
           .layer = int16_t(l),
           .buffers = operands({xn_, proj_, x, gate, up})});
  }
  void output() {
    const uint16_t out_xn = b_.buffer("output.norm", BufferRole::OutXn);
    plan_.logits_buffer = b_.buffer("logits", BufferRole::Logits);
    b_.op({.code = OpCode::Logits, .buffers = operands({x_, out_xn, plan_.logits_buffer})});
    b_.keep_to_end(plan_.logits_buffer);
  }

 private:
  static std::string prefix(int l) { return "blk." + std::to_string(l) + "."; }
  static std::array<uint16_t, kMaxOperands> operands(std::initializer_list<uint16_t> ids) {
    std::array<uint16_t, kMaxOperands> a;
    a.fill(kNoBuffer);
    std::copy(ids.begin(), ids.end(), a.begin());
    return a;
  }

  PlanBuilder& b_;
  const Model& m_;
  const ModelConfig& c_;  // this rank's share (model.rank_config())
  Plan& plan_;
  uint16_t x_ = kNoBuffer;   // the residual stream
  uint16_t xn_ = kNoBuffer;  // the last norm's output
  uint16_t q_ = kNoBuffer, k_ = kNoBuffer, v_ = kNoBuffer, attn_ = kNoBuffer;
  uint16_t gate_ = kNoBuffer;                     // the output gate (attn_gate models)
  uint16_t proj_ = kNoBuffer;                     // the last block's output
  uint16_t cos_sin_[2] = {kNoBuffer, kNoBuffer};  // per RoPE table
  uint16_t attn_mask_ = kNoBuffer;
  uint16_t per_layer_ = kNoBuffer;  // gemma4's per-layer inputs of every layer
  // A window layer's K, V and staged records, which the layers sharing its K/V read.
  struct KvOperands {
    uint16_t k = kNoBuffer, v = kNoBuffer, staged = kNoBuffer;
  };
  std::vector<KvOperands> window_kv_;  // [n_layer] set at each window layer keeping K/V
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
  PlanBuilder b(plan, model);
  PlanRecorder recorder(b, model, plan);
  walk_forward(model, recorder);
  b.place();
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
