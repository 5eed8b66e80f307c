#include "app/tools/quantize_rules.h"

#include <stdexcept>
#include <string>

namespace kvforge {
namespace {

using F = LlamaFtype;

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// The layers that get more bits in the _M mixtures: the first and last eighth, and every
// third layer in between.
bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

GgmlType output_type(const MixtureContext& ctx, uint64_t row_len) {
  if (row_len % type_traits(ctx.base).block_elems != 0) return GgmlType::Q8_0;
  return ctx.base == GgmlType::Q8_0 ? GgmlType::Q8_0 : GgmlType::Q6_K;
}

GgmlType attn_v_type(const MixtureContext& ctx, TensorRank r) {
  GgmlType t = ctx.base;
  const F f = ctx.ftype;
  if (f == F::MOSTLY_Q2_K) {
    t = ctx.n_gqa >= 4 ? GgmlType::Q4_K : GgmlType::Q3_K;
  } else if (f == F::MOSTLY_Q3_K_M) {
    t = r.index < 2 ? GgmlType::Q5_K : GgmlType::Q4_K;
  } else if (f == F::MOSTLY_Q3_K_L) {
    t = GgmlType::Q5_K;
  } else if ((f == F::MOSTLY_IQ4_NL || f == F::MOSTLY_IQ4_XS) && ctx.n_gqa >= 4) {
    t = GgmlType::Q5_K;
  } else if ((f == F::MOSTLY_Q4_K_M || f == F::MOSTLY_Q5_K_M) && use_more_bits(r.index, r.count)) {
    t = GgmlType::Q6_K;
  } else if (f == F::MOSTLY_Q4_K_S && r.index < 4) {
    t = GgmlType::Q5_K;
  }
  // 70B models share each attn_v among 8 query heads: the tensor is small, more bits are cheap.
  if (ctx.is_70b && (t == GgmlType::Q3_K || t == GgmlType::Q4_K)) t = GgmlType::Q5_K;
  return t;
}

GgmlType ffn_down_type(const MixtureContext& ctx, TensorRank r) {
  const int i = r.index, n = r.count;
  switch (ctx.ftype) {
    case F::MOSTLY_Q2_K:
      return GgmlType::Q3_K;
    case F::MOSTLY_Q3_K_M:
      return i < n / 16 ? GgmlType::Q5_K : GgmlType::Q4_K;
    case F::MOSTLY_Q3_K_L:
      return GgmlType::Q5_K;
    case F::MOSTLY_Q4_K_M:
    case F::MOSTLY_Q5_K_M:
      return use_more_bits(i, n) ? GgmlType::Q6_K : ctx.base;
    case F::MOSTLY_IQ4_NL:
    case F::MOSTLY_IQ4_XS:
    case F::MOSTLY_Q4_K_S:
      return i < n / 8 ? GgmlType::Q5_K : ctx.base;
    default:
      return ctx.base;
  }
}

GgmlType attn_output_type(const MixtureContext& ctx) {
  switch (ctx.ftype) {
    case F::MOSTLY_Q2_K:
      return GgmlType::Q3_K;
    case F::MOSTLY_Q3_K_M:
      return GgmlType::Q4_K;
    case F::MOSTLY_Q3_K_L:
      return GgmlType::Q5_K;
    default:
      return ctx.base;
  }
}

}  // namespace

TensorCategory tensor_category(std::string_view name) {
  if (name == "output.weight") return TensorCategory::Output;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight")
    return TensorCategory::TokenEmbd;
  if (contains(name, "attn_qkv.weight")) return TensorCategory::AttnQkv;
  if (contains(name, "attn_v.weight")) return TensorCategory::AttnV;
  if (contains(name, "attn_k.weight")) return TensorCategory::AttnK;
  if (contains(name, "attn_q.weight")) return TensorCategory::AttnQ;
  if (contains(name, "attn_output.weight")) return TensorCategory::AttnOutput;
  if (contains(name, "ffn_up")) return TensorCategory::FfnUp;
  if (contains(name, "ffn_gate")) return TensorCategory::FfnGate;
  if (contains(name, "ffn_down")) return TensorCategory::FfnDown;
  return TensorCategory::Other;
}

GgmlType mixture_type(const MixtureContext& ctx, TensorCategory category, TensorRank rank,
                      uint64_t row_len) {
  if (category == TensorCategory::Output ||
      (ctx.tied_output && category == TensorCategory::TokenEmbd))
    return output_type(ctx, row_len);
  switch (category) {
    case TensorCategory::AttnV:
    case TensorCategory::AttnQkv:  // llama.cpp handles a fused QKV as it handles attn_v
      return attn_v_type(ctx, rank);
    case TensorCategory::FfnDown:
      return ffn_down_type(ctx, rank);
    case TensorCategory::AttnOutput:
      return attn_output_type(ctx);
    default:
      return ctx.base;
  }
}

GgmlType fallback_type(GgmlType wanted, uint64_t row_len) {
  const uint32_t block = type_traits(wanted).block_elems;
  if (row_len % block == 0) return wanted;
  GgmlType t = wanted;
  switch (wanted) {
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
      t = GgmlType::Q4_0;
      break;
    case GgmlType::Q4_K:
      t = GgmlType::Q5_0;
      break;
    case GgmlType::Q5_K:
      t = GgmlType::Q5_1;
      break;
    case GgmlType::Q6_K:
      t = GgmlType::Q8_0;
      break;
    case GgmlType::IQ4_XS:
      t = GgmlType::IQ4_NL;
      break;
    default:
      if (block > 32)
        throw std::invalid_argument("no fallback type for " + std::string(type_name(wanted)) +
                                    " on rows of " + std::to_string(row_len));
      break;  // a 32-element type has no smaller block to fall back to
  }
  return row_len % type_traits(t).block_elems == 0 ? t : GgmlType::F16;
}

}  // namespace kvforge
