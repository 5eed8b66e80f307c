// How K and V are stored in every KV cache (contiguous, paged, static).
//
// The unit of storage is one *head record*: the head_dim values of one
// (position, kv head), plus whatever a quantized format keeps beside them
// (its scales). A record is self-contained, so a cache only needs
// kv_head_bytes() to lay out its memory, kv_encode_head() to write, and the
// attention kernel decodes records in place: no full-precision copy of a
// quantized cache is ever made. K and V may use different formats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kvforge {

enum class KvDtype : uint8_t {
  F32,   // [head_dim] float
  F16,   // [head_dim] IEEE half (f16.h)
  BF16,  // [head_dim] bfloat16 (kv_bf16.h)
  Int8,  // f16 scale + [head_dim] int8, one scale per token per head (kv_int8.h)
  Q4,    // 4-bit groups of 32 along head_dim with f16 scale and offset (kv_q4.h)
};

// Every dtype, in the order kv_dtype_names() lists them.
inline constexpr KvDtype kAllKvDtypes[] = {KvDtype::F32, KvDtype::F16, KvDtype::BF16, KvDtype::Int8,
                                           KvDtype::Q4};

struct KvFormat {
  KvDtype k = KvDtype::F32;
  KvDtype v = KvDtype::F32;
  bool operator==(const KvFormat&) const = default;
};

// Bytes of one (position, kv head) record of head_dim values, scales included.
// Throws std::invalid_argument when the format cannot hold head_dim (q4 needs
// a multiple of 32).
size_t kv_head_bytes(KvDtype t, int head_dim);
// Whether the format can store records of head_dim values.
bool kv_supports_head_dim(KvDtype t, int head_dim);
// src[head_dim] → one record at dst (kv_head_bytes(t, head_dim) bytes).
void kv_encode_head(KvDtype t, const float* src, uint8_t* dst, int head_dim);
// One record → dst[head_dim].
void kv_decode_head(KvDtype t, const uint8_t* src, float* dst, int head_dim);

const char* kv_dtype_name(KvDtype t);
// "f32", "f16", ...; nullopt for an unknown name.
std::optional<KvDtype> kv_dtype_from_name(std::string_view name);
// A comma-separated list of the names kv_dtype_from_name accepts, for error messages.
const char* kv_dtype_names();

}  // namespace kvforge
