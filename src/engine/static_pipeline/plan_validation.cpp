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
      : p_(plan), m_(model), c_(model.config()), n_threads_(n_threads) {}

  void run() {
    check_shape();
    required_.assign(p_.buffers.size(), 0);
    for (size_t i = 0; i < p_.ops.size(); ++i) check_op(i, p_.ops[i]);
    need(p_.logits_buffer, uint64_t(p_.n_logit_rows) * c_.n_vocab * 4, "logits");
    need(p_.attention_scratch_buffer,
         uint64_t(n_threads_) * attention_scratch_floats(c_.head_dim) * 4, "attention scratch");
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
    if (int(op.code) >= kOpCodeCount)
      fail(where + ": unknown op code " + std::to_string(int(op.code)));
    if (int(op.weight) >= kWeightRefCount)
      fail(where + ": unknown weight reference " + std::to_string(int(op.weight)));
    const bool layered = op.code == OpCode::Rope || op.code == OpCode::KvWrite ||
                         op.code == OpCode::Attention || is_per_layer_ref(op.weight);
    if (layered && (op.layer < 0 || op.layer >= c_.n_layer))
      fail(where + ": layer " + std::to_string(op.layer) + " outside [0, " +
           std::to_string(c_.n_layer) + ")");
    const bool full_rows = op.code == OpCode::UpdateMask || op.code == OpCode::BuildAttnMask ||
                           op.code == OpCode::Embed || op.code == OpCode::Rope ||
                           op.code == OpCode::KvWrite || op.code == OpCode::Attention;
    if (op.rows < 1 || op.rows > p_.rows || (full_rows && op.rows != p_.rows) ||
        (op.code == OpCode::GatherRows && op.rows != p_.n_logit_rows))
      fail(where + ": " + std::to_string(op.rows) + " rows in a plan of " +
           std::to_string(p_.rows));
    const uint64_t r = uint64_t(op.rows), f = 4;
    switch (op.code) {
      case OpCode::UpdateMask:
        break;
      case OpCode::BuildAttnMask:
        need(op.dst, r * uint64_t(p_.kv_len), where + " mask");
        break;
      case OpCode::Embed:
        need(op.dst, r * c_.n_embd * f, where + " embeddings");
        need(op.src0, r * c_.rope_dim * f, where + " rope angles");
        break;
      case OpCode::RmsNorm:
        expect_weight(where, op, is_norm_ref(op.weight), "a norm");
        need(op.src0, r * c_.n_embd * f, where + " input");
        need(op.dst, r * c_.n_embd * f, where + " output");
        break;
      case OpCode::MatMul: {
        expect_weight(where, op, is_matrix_ref(op.weight), "a matrix");
        const WeightView& w = weight_matrix(m_, op.weight, op.layer);
        need(op.src0, r * uint64_t(w.cols) * f, where + " input");
        need(op.dst, r * uint64_t(w.rows) * f, where + " output");
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
      case OpCode::Rope:
        need(op.src0, r * c_.q_dim() * f, where + " q");
        need(op.dst, r * c_.kv_dim() * f, where + " k");
        need(op.src1, r * c_.rope_dim * f, where + " rope angles");
        break;
      case OpCode::KvWrite:
        need(op.src0, r * c_.kv_dim() * f, where + " k");
        need(op.src1, r * c_.kv_dim() * f, where + " v");
        break;
      case OpCode::Attention:
        need(op.src0, r * c_.q_dim() * f, where + " q");
        need(op.src1, r * uint64_t(p_.kv_len), where + " mask");
        need(op.dst, r * c_.q_dim() * f, where + " output");
        break;
      case OpCode::AddInto:
        need(op.src0, r * c_.n_embd * f, where + " input");
        need(op.dst, r * c_.n_embd * f, where + " output");
        break;
      case OpCode::SwiGlu:
        need(op.src0, r * c_.n_ff * f, where + " up");
        need(op.dst, r * c_.n_ff * f, where + " gate");
        break;
      case OpCode::GatherRows:
        need(op.src0, uint64_t(p_.rows) * c_.n_embd * f, where + " input");
        need(op.dst, r * c_.n_embd * f, where + " output");
        break;
    }
  }

  void expect_weight(const std::string& where, const PlanOp& op, bool ok, const char* kind) {
    if (!ok) fail(where + ": weight " + weight_ref_name(op.weight) + " is not " + kind);
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

void validate_plan_set(const PlanSet& set, const Model& model) {
  try {
    set.config.validate();
  } catch (const std::invalid_argument& e) {
    throw PlanError(e.what());
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
