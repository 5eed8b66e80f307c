// Type-dispatched conversion of whole rows between f32 and a storage format.
// Each format's block layout is documented in its own header
// (f16.h, bf16.h, q8_0.h, q4_0.h, q4_k.h, q6_k.h, q5_0.h, iq4_nl.h); this is the switchboard.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace kvforge {

// True for the types kvforge can dequantize and compute with:
// F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K, Q5_0, IQ4_NL.
bool is_supported_weight_type(GgmlType t);
// True for the types kvforge can quantize to: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K, Q5_0,
// IQ4_NL.
bool is_quantizable_type(GgmlType t);

// n must be a multiple of the type's block size. Throws std::invalid_argument otherwise
// or for an unsupported type.
void dequantize_row(GgmlType t, const void* src, float* dst, int64_t n);
void quantize_row(GgmlType t, const float* src, void* dst, int64_t n);

}  // namespace kvforge
