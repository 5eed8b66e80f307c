// Type-dispatched conversion of whole rows between f32 and a storage format.
// Each format's block layout is documented in its own header
// (formats/<type>.h); this is the switchboard.
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.h"

namespace kvforge {

// True for the types kvforge can dequantize and compute with.
bool is_supported_weight_type(GgmlType t);
// True for the types kvforge can quantize to (today the same set).
bool is_quantizable_type(GgmlType t);
// The supported types' names in GGUF type-id order, comma separated
// ("f32, f16, q4_0, ..."), for error messages and help texts.
std::string supported_weight_type_names();

// n must be a multiple of the type's block size. Throws std::invalid_argument otherwise
// or for an unsupported type.
void dequantize_row(GgmlType t, const void* src, float* dst, int64_t n);
void quantize_row(GgmlType t, const float* src, void* dst, int64_t n);

}  // namespace kvforge
