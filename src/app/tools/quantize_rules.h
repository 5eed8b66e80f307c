// llama.cpp's per-tensor rules for its quantization mixtures
// (llama_tensor_get_type_impl in src/llama-quant.cpp), restricted to what
// applies to llama and qwen2 models without experts and without an importance
// matrix. Used by quantize_plan.cpp; see quantize_plan.h for the summary.
#pragma once

#include <cstdint>
#include <string_view>

#include "app/tools/quantize_recipe.h"
#include "core/dtype.h"

namespace kvforge {

// llama.cpp's tensor categories (tensor_get_category): what a tensor is, by its name.
enum class TensorCategory {
  Output,
  TokenEmbd,
  AttnQkv,
  AttnV,
  AttnK,
  AttnQ,
  AttnOutput,
  FfnUp,
  FfnGate,
  FfnDown,
  Other
};

TensorCategory tensor_category(std::string_view name);

// Facts about the whole file that the rules read.
struct MixtureContext {
  LlamaFtype ftype;
  GgmlType base;
  bool tied_output = false;  // no output.weight: token_embd is quantized as the output
  int n_gqa = 1;             // query heads per KV head
  bool is_70b = false;       // llama.cpp's LLM_TYPE_70B (80 layers, GQA)
};

// Where a tensor stands among its kind, counted in llama-quantize's tensor
// order (by layer, then by name): attn_v-like tensors are counted against
// their total, ffn_down tensors against n_layer.
struct TensorRank {
  int index = 0;
  int count = 0;
};

// The type llama.cpp's rules give a tensor before the row-length fallback.
GgmlType mixture_type(const MixtureContext& ctx, TensorCategory category, TensorRank rank,
                      uint64_t row_len);

// tensor_type_fallback: `wanted` when its block divides row_len, else a type with
// 32-element blocks, else F16.
GgmlType fallback_type(GgmlType wanted, uint64_t row_len);

}  // namespace kvforge
