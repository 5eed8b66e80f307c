// What `kvforge quantize --type NAME` asks for: one of llama.cpp's quantization
// mixtures (llama-quantize's file types, e.g. Q4_K_M: mostly Q4_K with some
// tensors given more bits), or a single storage type for every weight matrix.
//
// A mixture is named by llama-quantize's name and numbered by its llama_ftype
// id, which the output file stores as general.file_type. Its `base` type is the
// one the rules start from for every matrix (llama_ftype_get_default_type).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/dtype.h"

namespace kvforge {

// llama_ftype ids (llama.h) of the mixtures kvforge plans.
enum class LlamaFtype : uint32_t {
  ALL_F32 = 0,
  MOSTLY_F16 = 1,
  MOSTLY_Q4_0 = 2,
  MOSTLY_Q4_1 = 3,
  MOSTLY_Q8_0 = 7,
  MOSTLY_Q5_0 = 8,
  MOSTLY_Q5_1 = 9,
  MOSTLY_Q2_K = 10,
  MOSTLY_Q3_K_S = 11,
  MOSTLY_Q3_K_M = 12,
  MOSTLY_Q3_K_L = 13,
  MOSTLY_Q4_K_S = 14,
  MOSTLY_Q4_K_M = 15,
  MOSTLY_Q5_K_S = 16,
  MOSTLY_Q5_K_M = 17,
  MOSTLY_Q6_K = 18,
  MOSTLY_IQ4_NL = 25,
  MOSTLY_IQ4_XS = 30,
  MOSTLY_BF16 = 32,
};

struct QuantMixture {
  std::string_view name;  // as llama-quantize spells it: "Q4_K_M"
  LlamaFtype ftype;
  GgmlType base;
};

// The mixtures, in llama-quantize's order of its help text.
std::span<const QuantMixture> quant_mixtures();

// general.file_type's name as llama.cpp prints it ("Q4_K_M", "F16", "BF16");
// empty for an id kvforge does not name.
std::string_view file_type_name(uint32_t ftype);

struct QuantRecipe {
  std::string name;   // the mixture's name, or the single type's lower-case name
  LlamaFtype ftype;   // written as general.file_type
  GgmlType base;      // every matrix's type before the mixture's rules and fallbacks
  bool pure = false;  // no mixture rules: every matrix in `base` (fallbacks still apply)
};

// Resolves --type NAME (case-insensitive). A mixture name wins over the type of
// the same name (Q4_0, Q8_0, Q2_K, Q6_K, IQ4_NL, IQ4_XS are both), as in
// llama-quantize; `pure` then keeps every matrix in the base type, like
// llama-quantize --pure. Any other name must be a type kvforge can encode
// (is_quantizable_type) and is pure by definition. Throws std::invalid_argument
// naming the accepted single types and mixtures.
QuantRecipe parse_quant_recipe(std::string_view name, bool pure);

// A block-quantized type (ggml_is_quantized): anything but the float types.
inline bool is_quantized_type(GgmlType t) {
  return t != GgmlType::F32 && t != GgmlType::F16 && t != GgmlType::BF16;
}

// "f32, f16, ..." : the single types kvforge can encode now, and the mixture names.
std::string quantizable_type_list();
std::string quant_mixture_list();

}  // namespace kvforge
