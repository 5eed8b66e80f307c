#include "core/formats/kv_format.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "core/enum_names.h"
#include "core/formats/bf16.h"
#include "core/formats/f16.h"
#include "core/formats/kv_bf16.h"
#include "core/formats/kv_int8.h"
#include "core/formats/kv_q4.h"

namespace kvforge {
namespace {

[[noreturn]] void unknown(KvDtype t) {
  throw std::invalid_argument("unknown KV dtype " + std::to_string(int(t)));
}

}  // namespace

bool kv_supports_head_dim(KvDtype t, int head_dim) {
  if (head_dim <= 0) return false;
  return t != KvDtype::Q4 || head_dim % kKvQ4Group == 0;
}

size_t kv_head_bytes(KvDtype t, int head_dim) {
  if (!kv_supports_head_dim(t, head_dim))
    throw std::invalid_argument(std::string("KV type ") + kv_dtype_name(t) +
                                " cannot store heads of " + std::to_string(head_dim) + " values" +
                                (t == KvDtype::Q4 ? " (needs a multiple of 32)" : ""));
  switch (t) {
    case KvDtype::F32:
      return size_t(head_dim) * 4;
    case KvDtype::F16:
      return size_t(head_dim) * 2;
    case KvDtype::BF16:
      return kv_bf16_record_bytes(head_dim);
    case KvDtype::Int8:
      return kv_int8_record_bytes(head_dim);
    case KvDtype::Q4:
      return kv_q4_record_bytes(head_dim);
  }
  unknown(t);
}

void kv_encode_head(KvDtype t, const float* src, uint8_t* dst, int head_dim) {
  switch (t) {
    case KvDtype::F32:
      std::memcpy(dst, src, size_t(head_dim) * 4);
      return;
    case KvDtype::F16:
      quantize_row_f16(src, reinterpret_cast<uint16_t*>(dst), head_dim);
      return;
    case KvDtype::BF16:
      quantize_row_bf16(src, reinterpret_cast<uint16_t*>(dst), head_dim);
      return;
    case KvDtype::Int8:
      kv_int8_encode(src, dst, head_dim);
      return;
    case KvDtype::Q4:
      kv_q4_encode(src, dst, head_dim);
      return;
  }
  unknown(t);
}

void kv_decode_head(KvDtype t, const uint8_t* src, float* dst, int head_dim) {
  switch (t) {
    case KvDtype::F32:
      std::memcpy(dst, src, size_t(head_dim) * 4);
      return;
    case KvDtype::F16:
      dequantize_row_f16(reinterpret_cast<const uint16_t*>(src), dst, head_dim);
      return;
    case KvDtype::BF16:
      dequantize_row_bf16(reinterpret_cast<const uint16_t*>(src), dst, head_dim);
      return;
    case KvDtype::Int8:
      kv_int8_decode(src, dst, head_dim);
      return;
    case KvDtype::Q4:
      kv_q4_decode(src, dst, head_dim);
      return;
  }
  unknown(t);
}

constexpr EnumName<KvDtype> kKvDtypeNames[] = {
    {KvDtype::F32, "f32"},   {KvDtype::F16, "f16"}, {KvDtype::BF16, "bf16"},
    {KvDtype::Int8, "int8"}, {KvDtype::Q4, "q4"},
};

const char* kv_dtype_name(KvDtype t) { return name_of(t, kKvDtypeNames); }

std::optional<KvDtype> kv_dtype_from_name(std::string_view name) {
  return value_named(name, kKvDtypeNames);
}

const char* kv_dtype_names() { return "f32, f16, bf16, int8, q4"; }

}  // namespace kvforge
