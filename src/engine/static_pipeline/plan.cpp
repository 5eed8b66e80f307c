#include "engine/static_pipeline/plan.h"

#include <algorithm>

namespace kvforge {
namespace {

using R = BufferRole;
constexpr OperandRole kMasks[] = {{R::AttnMask}};
constexpr OperandRole kEmbed[] = {
    {R::X}, {R::CosSin}, {R::CosSin, true}, {R::PerLayerInputs, true}};
constexpr OperandRole kNorm[] = {{R::X}, {R::Xn}};
constexpr OperandRole kAttentionIn[] = {{R::Xn}, {R::CosSin}, {R::Q},
                                        {R::K},  {R::V},      {R::AttnGate, true}};
constexpr OperandRole kAttend[] = {{R::Q}, {R::K, true}, {R::V, true}, {R::AttnMask}, {R::Attn}};
constexpr OperandRole kWindowAttend[] = {{R::Q}, {R::K}, {R::V}, {R::Staged}, {R::Attn}};
constexpr OperandRole kAttentionOut[] = {{R::Attn}, {R::Proj}, {R::AttnGate, true}};
constexpr OperandRole kResidualNorm[] = {{R::Proj}, {R::X}, {R::Xn, true}};
constexpr OperandRole kFfn[] = {{R::Xn}, {R::Gate}, {R::Up}, {R::Proj}};
constexpr OperandRole kLogits[] = {{R::X}, {R::OutXn}, {R::Logits}};
constexpr OperandRole kMoeFfn[] = {
    {R::Xn}, {R::Proj}, {R::X, true}, {R::Gate, true}, {R::Up, true}};
constexpr OperandRole kLinearAttention[] = {{R::Xn}, {R::Proj}};
constexpr OperandRole kLayerTail[] = {
    {R::X}, {R::Proj}, {R::PerLayerInputs, true}, {R::PerLayerGate, true}};

}  // namespace

std::span<const OperandRole> op_roles(OpCode code) {
  static constexpr std::span<const OperandRole> kRoles[kOpCodeCount] = {
      kMasks,        kEmbed, kNorm,   kAttentionIn, kAttend,          kWindowAttend, kAttentionOut,
      kResidualNorm, kFfn,   kLogits, kMoeFfn,      kLinearAttention, kLayerTail};
  const int i = int(code);
  return i >= 0 && i < kOpCodeCount ? kRoles[i] : std::span<const OperandRole>();
}

const char* op_name(OpCode code) {
  static const char* const kNames[kOpCodeCount] = {
      "masks",         "embed",         "norm", "attention_in", "attend",  "window_attend",
      "attention_out", "residual_norm", "ffn",  "logits",       "moe_ffn", "linear_attention",
      "layer_tail"};
  const int i = int(code);
  return i >= 0 && i < kOpCodeCount ? kNames[i] : "invalid";
}

const char* role_name(BufferRole role) {
  static const char* const kNames[] = {"x",
                                       "xn",
                                       "rope angles",
                                       "q",
                                       "k",
                                       "v",
                                       "attention mask",
                                       "staged records",
                                       "attention output",
                                       "block output",
                                       "gate",
                                       "up",
                                       "logit rows",
                                       "logits",
                                       "output gate",
                                       "per-layer inputs",
                                       "per-layer gate"};
  return kNames[int(role)];
}

std::string Plan::label() const {
  return std::string(kind == PlanKind::Prefill ? "prefill" : "generate") + "[" +
         std::to_string(rows) + " x " + std::to_string(kv_len) + "]";
}

uint64_t PlanSet::largest_arena_bytes() const {
  uint64_t n = prefill.arena_bytes;
  for (const Plan& p : generate) n = std::max(n, p.arena_bytes);
  return n;
}

uint64_t PlanSet::largest_matmul_scratch_bytes() const {
  uint64_t n = prefill.matmul_scratch_bytes;
  for (const Plan& p : generate) n = std::max(n, p.matmul_scratch_bytes);
  return n;
}

}  // namespace kvforge
