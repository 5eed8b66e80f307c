// Which storage type each tensor of a model gets under a quantization recipe:
// the planning half of `kvforge quantize`, separate from the conversion so that
// it can be checked against llama-quantize's choices without touching weights.
//
// The rules are llama.cpp's (src/llama-quant.cpp, llama_tensor_get_type and
// tensor_type_fallback) for the llama and qwen2 architectures without experts:
//  - only 2-D tensors whose name ends in "weight" (not "_norm.weight") are
//    quantized; 1-D tensors (norms, biases) keep their type;
//  - output.weight (token_embd.weight too when the output is tied to it) gets
//    Q6_K, or Q8_0 when its rows are not a multiple of the base type's block,
//    or stays Q8_0 in a Q8_0 file;
//  - attn_v (and a fused attn_qkv), attn_output and ffn_down get more bits in
//    some mixtures, some of them on the layers that "use more bits": the first
//    and last eighth of the layers and every third layer in between;
//  - a type whose block does not divide the row length falls back:
//    Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K/Q3_K -> Q4_0,
//    IQ4_XS -> IQ4_NL, and to F16 when the fallback's 32 does not divide either.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "app/tools/quantize_recipe.h"
#include "core/dtype.h"
#include "core/gguf/gguf_file.h"

namespace kvforge {

// The hyperparameters the rules read.
struct QuantModelFacts {
  std::string arch;  // general.architecture
  int n_layer = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int n_expert = 0;  // 0 without experts
};

struct QuantTensor {
  std::string name;
  std::vector<uint64_t> dims;  // ne[0] (row length) first
  GgmlType type = GgmlType::F32;
};

struct PlannedTensor {
  std::string name;
  GgmlType from = GgmlType::F32;
  GgmlType to = GgmlType::F32;
  bool quantized = false;  // false: copied unchanged (to == from)
  bool fell_back = false;  // `to` replaced a type whose block does not divide the rows
};

// Reads the facts from a GGUF's metadata. Throws gguf::GgufError naming a missing key.
QuantModelFacts read_quant_facts(const gguf::GgufFile& file);
std::vector<QuantTensor> read_quant_tensors(const gguf::GgufFile& file);

// One entry per tensor, in the order given. Throws std::invalid_argument when a
// mixture's rules are asked for an architecture or expert count they are not
// implemented for (pure recipes work for any model).
std::vector<PlannedTensor> plan_quantization(const QuantModelFacts& facts,
                                             std::span<const QuantTensor> tensors,
                                             const QuantRecipe& recipe);

}  // namespace kvforge
