#include "core/formats/row_codec.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace kvforge {

// Temporary: F32 only until the format headers land.
bool is_supported_weight_type(GgmlType t) { return t == GgmlType::F32; }
bool is_quantizable_type(GgmlType t) { return t == GgmlType::F32; }

void dequantize_row(GgmlType t, const void* src, float* dst, int64_t n) {
  if (t != GgmlType::F32)
    throw std::invalid_argument("dequantize_row: unsupported type " + std::string(type_name(t)));
  std::memcpy(dst, src, size_t(n) * sizeof(float));
}

void quantize_row(GgmlType t, const float* src, void* dst, int64_t n) {
  if (t != GgmlType::F32)
    throw std::invalid_argument("quantize_row: unsupported type " + std::string(type_name(t)));
  std::memcpy(dst, src, size_t(n) * sizeof(float));
}

}  // namespace kvforge
