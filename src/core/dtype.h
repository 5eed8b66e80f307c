// Tensor element types as numbered by the GGUF format (ggml_type), with the
// block geometry needed to size a tensor of any of them. Sizes for types that
// kvforge cannot compute with are still listed so that the GGUF reader can
// validate (and `kvforge info` can describe) any file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kvforge {

enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

struct TypeTraits {
  std::string_view name;  // lower case, as in `kvforge quantize --type`
  uint32_t block_elems;   // elements per block (1 for plain types)
  uint32_t block_bytes;   // bytes per block
};

// Traits of a type id read from a file; nullopt for ids no known format uses.
std::optional<TypeTraits> type_traits(uint32_t type_id);
// Traits of a known type (never fails).
TypeTraits type_traits(GgmlType t);
std::string_view type_name(GgmlType t);
// Parses "f32", "q8_0", "Q4_K", ... (case-insensitive).
std::optional<GgmlType> parse_type_name(std::string_view name);

// Bytes of a row of `n_elems` elements; n_elems must be a multiple of the block size.
inline size_t row_bytes(GgmlType t, size_t n_elems) {
  const TypeTraits tr = type_traits(t);
  return n_elems / tr.block_elems * tr.block_bytes;
}

}  // namespace kvforge
