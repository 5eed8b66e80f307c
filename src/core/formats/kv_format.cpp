#include "core/formats/kv_format.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "core/formats/f16.h"

namespace kvforge {

size_t kv_head_bytes(KvDtype t, int head_dim) {
  switch (t) {
    case KvDtype::F32:
      return size_t(head_dim) * 4;
    case KvDtype::F16:
      return size_t(head_dim) * 2;
  }
  throw std::invalid_argument("unknown KV dtype " + std::to_string(int(t)));
}

void kv_encode_head(KvDtype t, const float* src, uint8_t* dst, int head_dim) {
  switch (t) {
    case KvDtype::F32:
      std::memcpy(dst, src, size_t(head_dim) * 4);
      return;
    case KvDtype::F16:
      quantize_row_f16(src, reinterpret_cast<uint16_t*>(dst), head_dim);
      return;
  }
  throw std::invalid_argument("unknown KV dtype " + std::to_string(int(t)));
}

void kv_decode_head(KvDtype t, const uint8_t* src, float* dst, int head_dim) {
  switch (t) {
    case KvDtype::F32:
      std::memcpy(dst, src, size_t(head_dim) * 4);
      return;
    case KvDtype::F16:
      dequantize_row_f16(reinterpret_cast<const uint16_t*>(src), dst, head_dim);
      return;
  }
  throw std::invalid_argument("unknown KV dtype " + std::to_string(int(t)));
}

const char* kv_dtype_name(KvDtype t) {
  switch (t) {
    case KvDtype::F32:
      return "f32";
    case KvDtype::F16:
      return "f16";
  }
  return "?";
}

std::optional<KvDtype> kv_dtype_from_name(std::string_view name) {
  for (KvDtype t : {KvDtype::F32, KvDtype::F16})
    if (name == kv_dtype_name(t)) return t;
  return std::nullopt;
}

const char* kv_dtype_names() { return "f32, f16"; }

}  // namespace kvforge
