#include "engine/static_pipeline/plan_validation.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/ops/attention.h"
#include "engine/static_pipeline/memory_planner.h"
#include "engine/static_pipeline/plan_weights.h"

namespace kvforge {
namespace {

constexpr int32_t kMaxRows = 1 << 16;
constexpr int32_t kMaxKvLen = 1 << 24;
constexpr size_t kMaxOps = 1 << 20;

class PlanChecker {
 public:
  PlanChecker(const Plan& plan, const Model& model, int32_t n_threads)
      : p_(plan), m_(model), c_(model.rank_config()), n_threads_(n_threads) {}

  void run() {
    check_shape();
    required_.assign(p_.buffers.size(), 0);
    layers_.assign(size_t(c_.n_layer), {});
    for (size_t i = 0; i < p_.ops.size(); ++i) check_op(i, p_.ops[i]);
    need(p_.logits_buffer, uint64_t(p_.n_logit_rows) * c_.n_vocab * 4, "logits");
    const bool windows = c_.sliding_window > 0;
    need(p_.attention_scratch_buffer,
         uint64_t(n_threads_) *
             (windows ? attention_queries_scratch_floats(c_.head_dim)
                      : attention_scratch_floats(c_.head_dim)) *
             4,
         "attention scratch");
    if (windows)
      need(p_.row_runs_buffer, uint64_t(p_.rows) * 4, "row runs");
    else if (p_.row_runs_buffer != kNoBuffer)
      fail("a row runs buffer in a plan without sliding-window layers");
    check_features();
    check_buffers();
  }

 private:
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
    const std::string where = "op " + std::to_string(index);
    check_op_shape(where, op);
    if (is_attention_side(op.code))
      check_attention_op(where, op);
    else
      check_block_op(where, op);
  }

  // The op's code, weight, layer and row count.
  void check_op_shape(const std::string& where, const PlanOp& op) {
    if (int(op.code) >= kOpCodeCount)
      fail(where + ": unknown op code " + std::to_string(int(op.code)));
    if (int(op.weight) >= kWeightRefCount)
      fail(where + ": unknown weight reference " + std::to_string(int(op.weight)));
    const bool layered = op.code == OpCode::Rope || op.code == OpCode::KvWrite ||
                         op.code == OpCode::Attention || op.code == OpCode::KvStage ||
                         op.code == OpCode::WindowAttention || is_per_layer_ref(op.weight);
    if (layered && (op.layer < 0 || op.layer >= c_.n_layer))
      fail(where + ": layer " + std::to_string(op.layer) + " outside [0, " +
           std::to_string(c_.n_layer) + ")");
    const bool full_rows = op.code == OpCode::UpdateMask || op.code == OpCode::BuildAttnMask ||
                           op.code == OpCode::Embed || op.code == OpCode::Rope ||
                           op.code == OpCode::KvWrite || op.code == OpCode::Attention ||
                           op.code == OpCode::RowRuns || op.code == OpCode::KvStage ||
                           op.code == OpCode::WindowAttention;
    if (op.rows < 1 || op.rows > p_.rows || (full_rows && op.rows != p_.rows) ||
        (op.code == OpCode::GatherRows && op.rows != p_.n_logit_rows))
      fail(where + ": " + std::to_string(op.rows) + " rows in a plan of " +
           std::to_string(p_.rows));
  }

  // Ops that read or write the KV cache, its mask or the RoPE angles.
  static bool is_attention_side(OpCode code) {
    return code == OpCode::UpdateMask || code == OpCode::BuildAttnMask || code == OpCode::Rope ||
           code == OpCode::KvWrite || code == OpCode::Attention || code == OpCode::RowRuns ||
           code == OpCode::KvStage || code == OpCode::WindowAttention;
  }

  void check_attention_op(const std::string& where, const PlanOp& op) {
    const uint64_t r = uint64_t(op.rows), f = 4;
    switch (op.code) {
      case OpCode::UpdateMask:
        break;
      case OpCode::BuildAttnMask:
        need(op.dst, r * uint64_t(p_.kv_len), where + " mask");
        break;
      case OpCode::Rope:
        need(op.src0, r * c_.q_dim() * f, where + " q");
        need(op.dst, r * c_.kv_dim() * f, where + " k");
        need(op.src1, r * c_.rope_dim * f, where + " rope angles");
        if (op.src1 != cos_sin_[m_.rope_index(op.layer)])
          fail(where + ": layer " + std::to_string(op.layer) +
               " rotates by the angles of another "
               "RoPE table than its own (table " +
               std::to_string(m_.rope_index(op.layer)) + ")");
        break;
      case OpCode::KvWrite:
        need(op.src0, r * c_.kv_dim() * f, where + " k");
        need(op.src1, r * c_.kv_dim() * f, where + " v");
        break;
      case OpCode::Attention:
        expect_window(where, op, false);
        need(op.src0, r * c_.q_dim() * f, where + " q");
        need(op.src1, r * uint64_t(p_.kv_len), where + " mask");
        need(op.dst, r * c_.q_dim() * f, where + " output");
        ++layers_[size_t(op.layer)].attentions;
        break;
      case OpCode::RowRuns:
        if (op.dst != p_.row_runs_buffer) fail(where + ": writes another buffer than the row runs");
        need(op.dst, r * 4, where + " row runs");
        break;
      case OpCode::KvStage:
        expect_window(where, op, true);
        need(op.src0, r * c_.kv_dim() * f, where + " k");
        need(op.src1, r * c_.kv_dim() * f, where + " v");
        need(op.dst, staged_bytes(r), where + " staged records");
        break;
      case OpCode::WindowAttention:
        expect_window(where, op, true);
        need(op.src0, r * c_.q_dim() * f, where + " q");
        need(op.src1, staged_bytes(r), where + " staged records");
        need(op.dst, r * c_.q_dim() * f, where + " output");
        ++layers_[size_t(op.layer)].attentions;
        break;
      default:
        break;
    }
  }

  // Embeddings and the RoPE angles of each table.
  void check_embed(const std::string& where, const PlanOp& op) {
    const uint64_t r = uint64_t(op.rows), f = 4;
    need(op.dst, r * c_.n_embd * f, where + " embeddings");
    need(op.src0, r * c_.rope_dim * f, where + " rope angles");
    if (m_.rope_tables().size() > 1)
      need(op.src1, r * c_.rope_dim * f, where + " rope angles of the second table");
    else if (op.src1 != kNoBuffer)
      fail(where + ": angles of a second RoPE table the model does not have");
    cos_sin_[0] = op.src0;
    cos_sin_[1] = op.src1;
  }

  // Per-head Q or K norms.
  void check_head_norm(const std::string& where, const PlanOp& op) {
    const uint64_t r = uint64_t(op.rows), f = 4;
    expect_weight(where, op, is_head_norm_ref(op.weight), "a Q/K norm");
    expect_vector(where, op, size_t(c_.head_dim));
    const int heads = op.weight == WeightRef::AttnQNorm ? c_.n_head : c_.n_kv_head;
    need(op.src0, r * uint64_t(heads) * c_.head_dim * f, where + " input");
    need(op.dst, r * uint64_t(heads) * c_.head_dim * f, where + " output");
    ++layers_[size_t(op.layer)].head_norms;
  }

  // The layer block's own ops: embeddings, norms, matmuls, biases, residuals, gates, logits.
  void check_block_op(const std::string& where, const PlanOp& op) {
    const uint64_t r = uint64_t(op.rows), f = 4;
    switch (op.code) {
      case OpCode::Embed:
        check_embed(where, op);
        break;
      case OpCode::RmsNorm:
        expect_weight(where, op, is_norm_ref(op.weight), "a norm");
        expect_vector(where, op, size_t(c_.n_embd));
        need(op.src0, r * c_.n_embd * f, where + " input");
        need(op.dst, r * c_.n_embd * f, where + " output");
        if (op.weight == WeightRef::AttnPostNorm || op.weight == WeightRef::FfnPostNorm)
          ++layers_[size_t(op.layer)].post_norms;
        break;
      case OpCode::HeadNorm:
        check_head_norm(where, op);
        break;
      case OpCode::MatMul: {
        expect_weight(where, op, is_matrix_ref(op.weight), "a matrix");
        const PlanMatrix w = weight_matrix(m_, op.weight, op.layer);
        need(op.src0, r * uint64_t(w.cols()) * f, where + " input");
        need(op.dst, r * uint64_t(w.rows()) * f, where + " output");
        matmul_scratch_ = std::max<uint64_t>(matmul_scratch_, matmul_scratch_bytes(w, op.rows));
        break;
      }
      case OpCode::AddBias: {
        expect_weight(where, op, is_bias_ref(op.weight), "a bias");
        const std::vector<float>& bias = weight_vector(m_, op.weight, op.layer);
        if (bias.empty()) fail(where + ": the model has no " + weight_ref_name(op.weight));
        need(op.dst, r * bias.size() * f, where + " output");
        break;
      }
      case OpCode::AddInto:
        need(op.src0, r * c_.n_embd * f, where + " input");
        need(op.dst, r * c_.n_embd * f, where + " output");
        break;
      case OpCode::SwiGlu:
      case OpCode::GeGlu:
        if ((op.code == OpCode::GeGlu) != (c_.ffn_act == FfnActivation::GeluTanh))
          fail(where + ": the model's FFN gate is not " +
               (op.code == OpCode::GeGlu ? "GELU" : "SiLU"));
        need(op.src0, r * c_.n_ff * f, where + " up");
        need(op.dst, r * c_.n_ff * f, where + " gate");
        break;
      case OpCode::SoftCap:
        if (c_.final_softcap <= 0.0f) fail(where + ": the model does not soft-cap its logits");
        need(op.dst, r * c_.n_vocab * f, where + " logits");
        ++softcaps_;
        break;
      case OpCode::GatherRows:
        need(op.src0, uint64_t(p_.rows) * c_.n_embd * f, where + " input");
        need(op.dst, r * c_.n_embd * f, where + " output");
        break;
      default:
        break;
    }
  }

  void expect_weight(const std::string& where, const PlanOp& op, bool ok, const char* kind) {
    if (!ok) fail(where + ": weight " + weight_ref_name(op.weight) + " is not " + kind);
  }

  void expect_vector(const std::string& where, const PlanOp& op, size_t n) {
    const size_t have = weight_vector(m_, op.weight, op.layer).size();
    if (have != n)
      fail(where + ": " + weight_ref_name(op.weight) + " has " + std::to_string(have) +
           " values, the op needs " + std::to_string(n) +
           (have == 0 ? " (the model has no such tensor)" : ""));
  }

  // Full attention reads the layer's cache as one span of the capacity, a
  // window as a ring: the op must be the layer's kind.
  void expect_window(const std::string& where, const PlanOp& op, bool windowed) {
    const int32_t w = c_.window(op.layer);
    if ((w > 0) != windowed)
      fail(where + ": layer " + std::to_string(op.layer) +
           (w > 0 ? " has a sliding window of " + std::to_string(w) + ", not full attention"
                  : " has full attention, no sliding window"));
  }

  // KvStage's records: K then V, [rows][n_kv_head] each, at the largest record of any format.
  uint64_t staged_bytes(uint64_t rows) const {
    return rows * uint64_t(c_.n_kv_head) * 2 * max_kv_record_bytes(c_.head_dim);
  }

  // The features of the model each layer's ops must compute, once each.
  void check_features() {
    for (int l = 0; l < c_.n_layer; ++l) {
      const LayerOps& ops = layers_[size_t(l)];
      const std::string where = "layer " + std::to_string(l) + ": ";
      if (ops.attentions != 1)
        fail(where + std::to_string(ops.attentions) + " attention ops, expected 1");
      if (ops.head_norms != (c_.qk_norm ? 2 : 0))
        fail(where + std::to_string(ops.head_norms) + " Q/K norm ops, the model has " +
             (c_.qk_norm ? "Q and K norms" : "none"));
      if (ops.post_norms != (c_.post_norms ? 2 : 0))
        fail(where + std::to_string(ops.post_norms) + " post norm ops, the model has " +
             (c_.post_norms ? "2" : "none"));
    }
    if (softcaps_ != (c_.final_softcap > 0.0f ? 1 : 0))
      fail(std::to_string(softcaps_) + " logit soft-capping ops, the model needs " +
           (c_.final_softcap > 0.0f ? "1" : "none"));
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
           " bytes, its matmuls need " + std::to_string(matmul_scratch_));
  }

  const Plan& p_;
  const Model& m_;
  const ModelConfig& c_;
  int32_t n_threads_;
  std::vector<uint64_t> required_;  // [buffers] bytes the ops need
  uint64_t matmul_scratch_ = 0;
  struct LayerOps {
    int attentions = 0, head_norms = 0, post_norms = 0;
  };
  std::vector<LayerOps> layers_;  // [n_layer]
  int softcaps_ = 0;
  uint16_t cos_sin_[2] = {kNoBuffer, kNoBuffer};  // Embed's angles of each RoPE table
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
  } catch (const std::invalid_argument& e) {  // a weight reference the model cannot resolve
    throw PlanError("plan " + plan.label() + ": " + e.what());
  }
}

uint64_t max_kv_record_bytes(int head_dim) {
  uint64_t n = 0;
  for (KvDtype t : kAllKvDtypes)
    if (kv_supports_head_dim(t, head_dim)) n = std::max<uint64_t>(n, kv_head_bytes(t, head_dim));
  return n;
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
