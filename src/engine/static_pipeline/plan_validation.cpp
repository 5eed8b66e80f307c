#include "engine/static_pipeline/plan_validation.h"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "core/ops/attention.h"
#include "engine/static_pipeline/memory_planner.h"
#include "model/block_steps.h"
#include "model/gated_delta_net.h"
#include "model/layer_walk.h"
#include "model/moe_ffn.h"
#include "model/per_layer_embedding.h"

namespace kvforge {
namespace {

constexpr int32_t kMaxRows = 1 << 16;
constexpr int32_t kMaxKvLen = 1 << 24;
constexpr size_t kMaxOps = 1 << 20;

const char* norm_name(uint8_t norm) {
  static const char* const kNames[] = {"attn_norm", "attn_post_norm", "ffn_norm",
                                       "ffn_post_norm"};  // LayerNorm's order
  return norm < 4 ? kNames[norm] : "no norm";
}

bool is_input_norm(uint8_t n) {
  return n == uint8_t(LayerNorm::Attn) || n == uint8_t(LayerNorm::Ffn);
}
bool is_post_norm(uint8_t n) {
  return n == uint8_t(LayerNorm::AttnPost) || n == uint8_t(LayerNorm::FfnPost);
}

class PlanChecker {
 public:
  PlanChecker(const Plan& plan, const Model& model, int32_t n_threads)
      : p_(plan), m_(model), c_(model.rank_config()), n_threads_(n_threads) {}

  void run() {
    check_shape();
    required_.assign(p_.buffers.size(), 0);
    roles_.assign(p_.buffers.size(), kNoRole);
    layers_.assign(size_t(c_.n_layer), {});
    window_kv_.assign(size_t(c_.n_layer), {kNoBuffer, kNoBuffer, kNoBuffer});
    for (size_t i = 0; i < p_.ops.size(); ++i) check_op(i, p_.ops[i]);
    need(p_.attention_scratch_buffer, attention_scratch_bytes(p_, c_), "attention scratch");
    if (c_.sliding_window > 0)
      need(p_.row_runs_buffer, uint64_t(p_.rows) * 4, "row runs");
    else if (p_.row_runs_buffer != kNoBuffer)
      fail("a row runs buffer in a plan without sliding-window layers");
    check_counts();
    check_buffers();
  }

 private:
  static constexpr uint8_t kNoRole = 0xFF;

  [[noreturn]] void fail(const std::string& what) const {
    throw PlanError("plan " + p_.label() + ": " + what);
  }

  void check_shape() {
    if (p_.rows < 1 || p_.rows > kMaxRows)
      fail("rows " + std::to_string(p_.rows) + " out of range");
    if (p_.kv_len < 1 || p_.kv_len > kMaxKvLen)
      fail("KV length " + std::to_string(p_.kv_len) + " out of range");
    if (p_.n_logit_rows < 1 || p_.n_logit_rows > p_.rows)
      fail("logit rows " + std::to_string(p_.n_logit_rows) + " not in [1, " +
           std::to_string(p_.rows) + "]");
    if (p_.ops.empty() || p_.ops.size() > kMaxOps) fail(std::to_string(p_.ops.size()) + " ops");
    const std::vector<int32_t>& s = p_.attention_split;
    if (s.size() != size_t(n_threads_) + 1)
      fail("attention split has " + std::to_string(s.size()) + " bounds, expected " +
           std::to_string(n_threads_ + 1) + " for " + std::to_string(n_threads_) + " threads");
    const int64_t items = int64_t(p_.rows) * c_.n_head;
    if (s.front() != 0 || s.back() != items || !std::is_sorted(s.begin(), s.end()))
      fail("attention split does not cover items [0, " + std::to_string(items) + ") in order");
  }

  // Records that buffer `b` must hold `bytes` for this use.
  void need(uint16_t b, uint64_t bytes, const std::string& use) {
    if (b == kNoBuffer || b >= p_.buffers.size())
      fail(use + ": buffer id " + std::to_string(b) + " is not one of the plan's " +
           std::to_string(p_.buffers.size()) + " buffers");
    required_[b] = std::max(required_[b], bytes);
  }

  void check_op(size_t index, const PlanOp& op) {
    if (int(op.code) >= kOpCodeCount)
      fail("op " + std::to_string(index) + ": unknown op code " + std::to_string(int(op.code)));
    const std::string where = "op " + std::to_string(index) + " (" + op_name(op.code) + ")";
    const bool layered =
        op.code != OpCode::Masks && op.code != OpCode::Embed && op.code != OpCode::Logits;
    if (layered) expect_layer(where, op.layer);
    const int32_t rows = op.code == OpCode::Logits ? p_.n_logit_rows : p_.rows;
    if (op.rows != rows)
      fail(where + ": " + std::to_string(op.rows) + " rows in a plan of " +
           std::to_string(p_.rows) + ", expected " + std::to_string(rows));
    check_operands(where, op);
    check_step(where, op);
    matmul_scratch_ = std::max(matmul_scratch_, op_matmul_scratch_bytes(m_, op));
  }

  void expect_layer(const std::string& where, int layer) const {
    if (layer < 0 || layer >= c_.n_layer)
      fail(where + ": layer " + std::to_string(layer) + " outside [0, " +
           std::to_string(c_.n_layer) + ")");
  }

  // Every operand one of the plan's buffers, in its role (one role per
  // buffer), absent only where the role is optional; none past the roles.
  void check_operands(const std::string& where, const PlanOp& op) {
    const std::span<const OperandRole> roles = op_roles(op.code);
    for (size_t i = 0; i < op.buffers.size(); ++i) {
      const uint16_t b = op.buffers[i];
      if (i >= roles.size()) {
        if (b != kNoBuffer) fail(where + ": operand " + std::to_string(i) + " past its roles");
        continue;
      }
      const BufferRole role = roles[i].role;
      if (b == kNoBuffer && roles[i].optional) continue;
      need(b, role_bytes(p_, c_, role), where + " " + role_name(role));
      if (roles_[b] == kNoRole) roles_[b] = uint8_t(role);
      if (roles_[b] != uint8_t(role))
        fail(where + ": buffer " + std::to_string(b) + " '" + p_.buffers[b].name + "' is used as " +
             role_name(BufferRole(roles_[b])) + " and as " + role_name(role));
    }
  }

  // What each step's fields must be for this model.
  void check_step(const std::string& where, const PlanOp& op) {
    switch (op.code) {
      case OpCode::Embed:
        return check_embed(where, op);
      case OpCode::Norm:
        if (!is_input_norm(op.norm))
          fail(where + ": " + norm_name(op.norm) + " is not an input norm");
        return expect_norm(where, op.norm, op.layer, false);
      case OpCode::ResidualNorm:
        return check_residual(where, op);
      case OpCode::LinearAttention:
        if (!c_.recurrent(op.layer))
          fail(where + ": layer " + std::to_string(op.layer) + " is an attention layer");
        ++layers_[size_t(op.layer)].linear;
        return;
      case OpCode::AttentionIn:
        expect_recurrent(where, op.layer, false);
        expect_gate(where, op.buffers[5]);
        ++layers_[size_t(op.layer)].inputs;
        if (op.buffers[1] != cos_sin_[m_.rope_index(op.layer)])
          fail(where + ": layer " + std::to_string(op.layer) +
               " rotates by the angles of another RoPE table than its own (table " +
               std::to_string(m_.rope_index(op.layer)) + ")");
        return;
      case OpCode::Attend:
      case OpCode::WindowAttend:
        expect_recurrent(where, op.layer, false);
        expect_window(where, op.layer, op.code == OpCode::WindowAttend);
        expect_kv_operands(where, op);
        ++layers_[size_t(op.layer)].attentions;
        return;
      case OpCode::LayerTail:
        expect_per_layer(where, op.buffers[2], op.buffers[3]);
        ++layers_[size_t(op.layer)].tails;
        return;
      case OpCode::AttentionOut:
        expect_recurrent(where, op.layer, false);
        expect_gate(where, op.buffers[2]);
        ++layers_[size_t(op.layer)].outputs;
        return;
      case OpCode::Ffn:
      case OpCode::MoeFfn:
        if ((op.code == OpCode::MoeFfn) != (c_.moe.n_expert > 0))
          fail(where + ": layer " + std::to_string(op.layer) + " has a " +
               (c_.moe.n_expert > 0 ? "mixture-of-experts" : "dense") + " FFN");
        if (op.code == OpCode::MoeFfn) expect_dense_beside(where, op);
        ++layers_[size_t(op.layer)].ffns;
        return;
      case OpCode::Logits:
        if (op.buffers[2] != p_.logits_buffer)
          fail(where + ": writes another buffer than the plan's logits");
        ++logits_ops_;
        return;
      case OpCode::Masks:
        ++mask_ops_;
        return;
    }
  }

  // Embeddings and the RoPE angles of each table.
  void check_embed(const std::string& where, const PlanOp& op) {
    if ((op.buffers[2] != kNoBuffer) != (m_.rope_tables().size() > 1))
      fail(where + ": " +
           (op.buffers[2] != kNoBuffer ? "angles of a second RoPE table the model "
                                         "does not have"
                                       : "no angles of the second RoPE table"));
    x_ = op.buffers[0];
    cos_sin_[0] = op.buffers[1];
    cos_sin_[1] = op.buffers[2];
    expect_per_layer(where, op.buffers[3], op.buffers[3]);
    per_layer_ = op.buffers[3];
    ++embed_ops_;
  }

  // x, gate and up exactly for experts beside a dense FFN (gemma4), x the
  // residual stream Embed wrote.
  void expect_dense_beside(const std::string& where, const PlanOp& op) const {
    const bool want = c_.experts_beside_ffn();
    for (int i : {2, 3, 4})
      if ((op.buffers[size_t(i)] != kNoBuffer) != want)
        fail(where + ": " +
             (want ? "no x, gate or up for the dense FFN beside the experts"
                   : "x, gate or up of a dense FFN the model does not have beside its experts"));
    if (want && op.buffers[2] != x_) fail(where + ": x in another buffer than Embed's");
  }

  // Per-layer inputs (and a tail's gate) exactly for models with per-layer
  // embeddings; a tail reads the inputs Embed computed.
  void expect_per_layer(const std::string& where, uint16_t inputs, uint16_t gate) const {
    const bool want = c_.n_embd_per_layer > 0;
    if ((inputs != kNoBuffer) != want || (gate != kNoBuffer) != want)
      fail(where + ": " +
           (want ? "no per-layer inputs for a model with per-layer embeddings"
                 : "per-layer inputs the model does not have"));
    if (embed_ops_ > 0 && inputs != per_layer_)
      fail(where + ": per-layer inputs in another buffer than Embed's");
  }

  // A layer keeping K/V writes its own (k, v given); a full layer reading
  // another's writes none; a window layer reading another's attends over
  // that layer's staged records, and writes its K/V if it is the last reader.
  void expect_kv_operands(const std::string& where, const PlanOp& op) {
    const int l = op.layer, src = c_.kv_source(l);
    const bool window = op.code == OpCode::WindowAttend;
    const std::array<uint16_t, 3> kv = {op.buffers[1], op.buffers[2],
                                        window ? op.buffers[3] : kNoBuffer};
    if (src == l) {
      if (kv[0] == kNoBuffer || kv[1] == kNoBuffer)
        fail(where + ": layer " + std::to_string(l) + " keeps K/V but writes none");
      if (window) window_kv_[size_t(l)] = kv;
      return;
    }
    if (window ? kv != window_kv_[size_t(src)] : kv[0] != kNoBuffer || kv[1] != kNoBuffer)
      fail(where + ": layer " + std::to_string(l) + " reads the K/V of layer " +
           std::to_string(src) +
           (window ? ", its op's k, v and staged records are not that "
                     "layer's"
                   : " and writes none, but has k or v operands"));
  }

  void check_residual(const std::string& where, const PlanOp& op) {
    if (!is_post_norm(op.norm)) fail(where + ": " + norm_name(op.norm) + " is not a post norm");
    expect_norm(where, op.norm, op.layer, true);
    if (op.next_norm == kNoNorm) {
      if (op.buffers[2] != kNoBuffer) fail(where + ": a normed output without a norm");
      return;
    }
    if (!is_input_norm(op.next_norm))
      fail(where + ": " + norm_name(op.next_norm) + " is not an input norm");
    expect_layer(where, op.next_layer);
    expect_norm(where, op.next_norm, op.next_layer, false);
    if (op.buffers[2] == kNoBuffer) fail(where + ": a norm without a normed output");
  }

  // The norm's weight holds n_embd values (a post norm may be absent: the model has none).
  void expect_norm(const std::string& where, uint8_t norm, int layer, bool may_be_empty) const {
    const size_t have = layer_norm_weight(m_, LayerNorm(norm), layer).size();
    if (have != size_t(c_.n_embd) && !(may_be_empty && have == 0))
      fail(where + ": " + norm_name(norm) + " of layer " + std::to_string(layer) + " has " +
           std::to_string(have) + " values, the op needs " + std::to_string(c_.n_embd));
  }

  // Attention ops only on attention layers (LinearAttention checks the converse).
  void expect_recurrent(const std::string& where, int layer, bool recurrent) const {
    if (c_.recurrent(layer) != recurrent)
      fail(where + ": layer " + std::to_string(layer) + " is a linear-attention layer");
  }

  // An output gate exactly for attn_gate models.
  void expect_gate(const std::string& where, uint16_t gate) const {
    if ((gate != kNoBuffer) != c_.attn_gate)
      fail(where + ": " +
           (c_.attn_gate ? "no output gate for a model with gated attention"
                         : "an output gate the model does not have"));
  }

  // Full attention reads the layer's cache as one span of the capacity, a
  // window as a ring: the op must be the layer's kind.
  void expect_window(const std::string& where, int layer, bool windowed) const {
    const int32_t w = c_.window(layer);
    if ((w > 0) != windowed)
      fail(where + ": layer " + std::to_string(layer) +
           (w > 0 ? " has a sliding window of " + std::to_string(w) + ", not full attention"
                  : " has full attention, no sliding window"));
  }

  // Each step of the walk once: the inputs, every layer's blocks, the logits.
  void check_counts() const {
    if (mask_ops_ != 1 || embed_ops_ != 1 || logits_ops_ != 1)
      fail(std::to_string(mask_ops_) + " masks, " + std::to_string(embed_ops_) + " embed and " +
           std::to_string(logits_ops_) + " logits ops, expected 1 each");
    for (int l = 0; l < c_.n_layer; ++l) {
      const LayerOps& ops = layers_[size_t(l)];
      const std::string where = "layer " + std::to_string(l) + ": ";
      // A linear-attention layer: one op instead of the attention's three
      // (which check_step refuses on it).
      if (c_.recurrent(l)) {
        if (ops.linear != 1 || ops.ffns != 1)
          fail(where + std::to_string(ops.linear) + " linear-attention and " +
               std::to_string(ops.ffns) + " FFN ops, expected 1 each");
        continue;
      }
      if (ops.attentions != 1)
        fail(where + std::to_string(ops.attentions) + " attention ops, expected 1");
      if (ops.inputs != 1 || ops.outputs != 1 || ops.ffns != 1)
        fail(where + std::to_string(ops.inputs) + " attention input, " +
             std::to_string(ops.outputs) + " attention output and " + std::to_string(ops.ffns) +
             " FFN ops, expected 1 each");
      const int tails = c_.arch == Architecture::Gemma4 ? 1 : 0;
      if (ops.tails != tails)
        fail(where + std::to_string(ops.tails) + " layer tail ops, expected " +
             std::to_string(tails));
    }
  }

  void check_buffers() {
    uint64_t end = 0;
    for (size_t b = 0; b < p_.buffers.size(); ++b) {
      const PlanBuffer& buf = p_.buffers[b];
      const std::string where = "buffer " + std::to_string(b) + " '" + buf.name + "'";
      if (required_[b] == 0) fail(where + " is never used");
      if (buf.bytes != required_[b])
        fail(where + " has " + std::to_string(buf.bytes) + " bytes, its ops need " +
             std::to_string(required_[b]));
      if (buf.offset % kArenaAlignment != 0)
        fail(where + " offset " + std::to_string(buf.offset) + " is not 64-byte aligned");
      if (buf.offset > p_.arena_bytes || buf.bytes > p_.arena_bytes - buf.offset)
        fail(where + " [" + std::to_string(buf.offset) + ", +" + std::to_string(buf.bytes) +
             ") lies outside the arena of " + std::to_string(p_.arena_bytes) + " bytes");
      end = std::max(end, buf.offset + buf.bytes);
    }
    const uint64_t expected_arena = (end + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
    if (p_.arena_bytes != expected_arena)
      fail("arena of " + std::to_string(p_.arena_bytes) + " bytes, its buffers end at " +
           std::to_string(expected_arena));
    if (p_.matmul_scratch_bytes != matmul_scratch_)
      fail("matmul scratch of " + std::to_string(p_.matmul_scratch_bytes) +
           " bytes, its ops need " + std::to_string(matmul_scratch_));
  }

  const Plan& p_;
  const Model& m_;
  const ModelConfig& c_;
  int32_t n_threads_;
  std::vector<uint64_t> required_;  // [buffers] bytes the ops need
  std::vector<uint8_t> roles_;      // [buffers] the BufferRole of its first use
  uint64_t matmul_scratch_ = 0;
  struct LayerOps {
    int inputs = 0, attentions = 0, outputs = 0, ffns = 0, linear = 0, tails = 0;
  };
  std::vector<LayerOps> layers_;  // [n_layer]
  int mask_ops_ = 0, embed_ops_ = 0, logits_ops_ = 0;
  uint16_t cos_sin_[2] = {kNoBuffer, kNoBuffer};  // Embed's angles of each RoPE table
  uint16_t per_layer_ = kNoBuffer;                // Embed's per-layer inputs
  uint16_t x_ = kNoBuffer;                        // Embed's residual stream
  // [n_layer] a window layer's k, v and staged operands, for the layers sharing its K/V.
  std::vector<std::array<uint16_t, 3>> window_kv_;
};

void expect_shape(const Plan& p, PlanKind kind, int32_t rows, int32_t kv_len, int32_t logit_rows,
                  const std::string& what) {
  if (p.kind != kind || p.rows != rows || p.kv_len != kv_len || p.n_logit_rows != logit_rows)
    throw PlanError(what + ": plan " + p.label() + " has " + std::to_string(p.rows) + " rows, KV " +
                    std::to_string(p.kv_len) + ", " + std::to_string(p.n_logit_rows) +
                    " logit rows; the configuration needs " + std::to_string(rows) + " rows, KV " +
                    std::to_string(kv_len) + ", " + std::to_string(logit_rows) + " logit rows");
}

}  // namespace

void validate_plan(const Plan& plan, const Model& model, int32_t n_threads) {
  if (n_threads < 1 || n_threads > 1024)
    throw PlanError("plan " + plan.label() + ": " + std::to_string(n_threads) + " threads");
  try {
    PlanChecker(plan, model, n_threads).run();
  } catch (const std::invalid_argument& e) {  // a weight the model cannot resolve
    throw PlanError("plan " + plan.label() + ": " + e.what());
  }
}

uint64_t max_kv_record_bytes(int head_dim) {
  uint64_t n = 0;
  for (KvDtype t : kAllKvDtypes)
    if (kv_supports_head_dim(t, head_dim)) n = std::max<uint64_t>(n, kv_head_bytes(t, head_dim));
  return n;
}

uint64_t role_bytes(const Plan& plan, const ModelConfig& c, BufferRole role) {
  const uint64_t r = uint64_t(plan.rows), f = sizeof(float);
  switch (role) {
    case BufferRole::X:
    case BufferRole::Xn:
    case BufferRole::Proj:
      return r * uint64_t(c.n_embd) * f;
    case BufferRole::CosSin:
      return r * uint64_t(c.max_rope_dim()) * f;
    case BufferRole::Q:
      return r * uint64_t(c.max_q_dim()) * (c.attn_gate ? 2 : 1) * f;
    case BufferRole::Attn:
    case BufferRole::AttnGate:
      return r * uint64_t(c.max_q_dim()) * f;
    case BufferRole::K:
    case BufferRole::V:
      return r * uint64_t(c.max_kv_dim()) * f;
    case BufferRole::AttnMask:
      return r * uint64_t(plan.kv_len);
    case BufferRole::Staged:
      return r * uint64_t(c.max_n_kv_head()) * 2 * max_kv_record_bytes(c.max_head_dim());
    case BufferRole::PerLayerInputs:
      return r * uint64_t(c.n_layer) * uint64_t(c.n_embd_per_layer) * f;
    case BufferRole::PerLayerGate:
      return r * uint64_t(c.n_embd_per_layer) * f;
    case BufferRole::Gate:
    case BufferRole::Up:
      return r * uint64_t(c.n_ff) * f;
    case BufferRole::OutXn:
      return uint64_t(plan.n_logit_rows) * uint64_t(c.n_embd) * f;
    case BufferRole::Logits:
      return uint64_t(plan.n_logit_rows) * uint64_t(c.n_vocab) * f;
  }
  return 0;
}

uint64_t attention_scratch_bytes(const Plan& plan, const ModelConfig& c) {
  // attend_queries (WindowAttend, and Attend with sinks) needs the larger scratch.
  const uint64_t per_thread = c.sliding_window > 0 || c.attn_sinks
                                  ? attention_queries_scratch_floats(c.max_head_dim())
                                  : attention_scratch_floats(c.max_head_dim());
  return uint64_t(plan.attention_split.size() - 1) * per_thread * sizeof(float);
}

uint64_t op_matmul_scratch_bytes(const Model& model, const PlanOp& op) {
  switch (op.code) {
    case OpCode::AttentionIn:
      return matmul_step_scratch_bytes(model, MatmulStep::AttentionInput, op.layer, op.rows);
    case OpCode::AttentionOut:
      return matmul_step_scratch_bytes(model, MatmulStep::AttentionOutput, op.layer, op.rows);
    case OpCode::Ffn:
      return matmul_step_scratch_bytes(model, MatmulStep::DenseFfn, op.layer, op.rows);
    case OpCode::Logits:
      return matmul_step_scratch_bytes(model, MatmulStep::OutputLogits, -1, op.rows);
    case OpCode::LinearAttention:
      return gated_delta_net_scratch_bytes(
          model.rank_config(), model.weights().layers[size_t(op.layer)].linear, op.rows);
    case OpCode::MoeFfn: {
      const size_t experts = moe_ffn_scratch_bytes(
          model.rank_config(), model.weights().layers[size_t(op.layer)].moe, op.rows);
      if (!model.rank_config().experts_beside_ffn()) return experts;
      return std::max(experts, matmul_step_scratch_bytes(model, MatmulStep::DenseFfn, op.layer,
                                                         op.rows));  // gemma4's dense FFN
    }
    case OpCode::Embed:
    case OpCode::LayerTail:
      return per_layer_scratch_bytes(model, op.code == OpCode::Embed ? -1 : op.layer, op.rows);
    default:
      return 0;
  }
}

std::vector<int32_t> layer_windows(const ModelConfig& config) {
  std::vector<int32_t> w(size_t(config.n_layer));
  for (int l = 0; l < config.n_layer; ++l) w[size_t(l)] = config.window(l);
  return w;
}

void validate_plan_set(const PlanSet& set, const Model& model) {
  try {
    set.config.validate();
  } catch (const std::invalid_argument& e) {
    throw PlanError(e.what());
  }
  const std::vector<int32_t> windows = layer_windows(model.config());
  if (set.layer_windows != windows) {
    std::string diff;
    for (size_t l = 0; l < std::max(windows.size(), set.layer_windows.size()); ++l) {
      const auto at = [l](const std::vector<int32_t>& v) {
        return l < v.size() ? std::to_string(v[l]) : std::string("none");
      };
      if (at(set.layer_windows) != at(windows)) {
        diff = "layer " + std::to_string(l) + " window " + at(set.layer_windows) +
               " in the plans, " + at(windows) + " in the model";
        break;
      }
    }
    throw PlanError("compiled for other sliding windows (" +
                    (diff.empty() ? std::string("layer count differs") : diff) +
                    "); recompile with kvforge compile");
  }
  const StaticConfig& c = set.config;
  expect_shape(set.prefill, PlanKind::Prefill, c.prefill_chunk, c.capacity(), 1, "prefill");
  validate_plan(set.prefill, model, set.n_threads);
  if (set.generate.size() != c.generate_variants.size())
    throw PlanError(std::to_string(set.generate.size()) + " generate plans for " +
                    std::to_string(c.generate_variants.size()) + " variants");
  for (size_t i = 0; i < set.generate.size(); ++i) {
    expect_shape(set.generate[i], PlanKind::Generate, c.slots, c.generate_variants[i], c.slots,
                 "generate variant " + std::to_string(c.generate_variants[i]));
    validate_plan(set.generate[i], model, set.n_threads);
  }
}

}  // namespace kvforge
