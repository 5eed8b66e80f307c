#include "core/formats/row_codec.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "core/formats/bf16.h"
#include "core/formats/f16.h"
#include "core/formats/iq4_nl.h"
#include "core/formats/iq4_xs.h"
#include "core/formats/mxfp4.h"
#include "core/formats/q2_k.h"
#include "core/formats/q3_k.h"
#include "core/formats/q4_0.h"
#include "core/formats/q4_1.h"
#include "core/formats/q4_k.h"
#include "core/formats/q5_0.h"
#include "core/formats/q5_1.h"
#include "core/formats/q5_k.h"
#include "core/formats/q6_k.h"
#include "core/formats/q8_0.h"

namespace kvforge {
namespace {

bool is_codec_type(GgmlType t) {
  switch (t) {
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16:
    case GgmlType::Q8_0:
    case GgmlType::Q4_0:
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::Q4_1:
    case GgmlType::Q5_1:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
    case GgmlType::IQ4_XS:
    case GgmlType::Q5_0:
    case GgmlType::IQ4_NL:
    case GgmlType::MXFP4:
      return true;
    default:
      return false;
  }
}

void check_row(const char* who, GgmlType t, int64_t n) {
  if (!is_codec_type(t)) {
    throw std::invalid_argument(std::string(who) + ": unsupported type " +
                                std::string(type_name(t)));
  }
  const uint32_t block = type_traits(t).block_elems;
  if (n < 0 || n % block != 0) {
    throw std::invalid_argument(std::string(who) + ": row of " + std::to_string(n) +
                                " elements is not a multiple of the " + std::string(type_name(t)) +
                                " block size " + std::to_string(block));
  }
}

}  // namespace

bool is_supported_weight_type(GgmlType t) { return is_codec_type(t); }
bool is_quantizable_type(GgmlType t) { return is_codec_type(t); }

std::string supported_weight_type_names() {
  std::string names;
  for (uint32_t id = 0; id < 64; ++id) {
    if (!type_traits(id) || !is_codec_type(GgmlType(id))) continue;
    names += (names.empty() ? "" : ", ") + std::string(type_name(GgmlType(id)));
  }
  return names;
}

void dequantize_row(GgmlType t, const void* src, float* dst, int64_t n) {
  check_row("dequantize_row", t, n);
  if (n == 0) return;  // an empty row may come with null pointers (memcpy forbids them)
  switch (t) {
    case GgmlType::F32:
      std::memcpy(dst, src, size_t(n) * sizeof(float));
      return;
    case GgmlType::F16:
      return dequantize_row_f16(static_cast<const uint16_t*>(src), dst, n);
    case GgmlType::BF16:
      return dequantize_row_bf16(static_cast<const uint16_t*>(src), dst, n);
    case GgmlType::Q8_0:
      return dequantize_row_q8_0(static_cast<const BlockQ8_0*>(src), dst, n);
    case GgmlType::Q4_0:
      return dequantize_row_q4_0(static_cast<const BlockQ4_0*>(src), dst, n);
    case GgmlType::Q2_K:
      return dequantize_row_q2_k(static_cast<const BlockQ2_K*>(src), dst, n);
    case GgmlType::Q3_K:
      return dequantize_row_q3_k(static_cast<const BlockQ3_K*>(src), dst, n);
    case GgmlType::Q4_1:
      return dequantize_row_q4_1(static_cast<const BlockQ4_1*>(src), dst, n);
    case GgmlType::Q5_1:
      return dequantize_row_q5_1(static_cast<const BlockQ5_1*>(src), dst, n);
    case GgmlType::Q4_K:
      return dequantize_row_q4_k(static_cast<const BlockQ4_K*>(src), dst, n);
    case GgmlType::Q5_K:
      return dequantize_row_q5_k(static_cast<const BlockQ5_K*>(src), dst, n);
    case GgmlType::Q6_K:
      return dequantize_row_q6_k(static_cast<const BlockQ6_K*>(src), dst, n);
    case GgmlType::IQ4_XS:
      return dequantize_row_iq4_xs(static_cast<const BlockIQ4_XS*>(src), dst, n);
    case GgmlType::Q5_0:
      return dequantize_row_q5_0(static_cast<const BlockQ5_0*>(src), dst, n);
    case GgmlType::IQ4_NL:
      return dequantize_row_iq4_nl(static_cast<const BlockIQ4_NL*>(src), dst, n);
    case GgmlType::MXFP4:
      return dequantize_row_mxfp4(static_cast<const BlockMXFP4*>(src), dst, n);
    default:
      break;  // unreachable: check_row rejected it
  }
}

void quantize_row(GgmlType t, const float* src, void* dst, int64_t n) {
  check_row("quantize_row", t, n);
  switch (t) {
    case GgmlType::F32:
      std::memcpy(dst, src, size_t(n) * sizeof(float));
      return;
    case GgmlType::F16:
      return quantize_row_f16(src, static_cast<uint16_t*>(dst), n);
    case GgmlType::BF16:
      return quantize_row_bf16(src, static_cast<uint16_t*>(dst), n);
    case GgmlType::Q8_0:
      return quantize_row_q8_0(src, static_cast<BlockQ8_0*>(dst), n);
    case GgmlType::Q4_0:
      return quantize_row_q4_0(src, static_cast<BlockQ4_0*>(dst), n);
    case GgmlType::Q2_K:
      return quantize_row_q2_k(src, static_cast<BlockQ2_K*>(dst), n);
    case GgmlType::Q3_K:
      return quantize_row_q3_k(src, static_cast<BlockQ3_K*>(dst), n);
    case GgmlType::Q4_1:
      return quantize_row_q4_1(src, static_cast<BlockQ4_1*>(dst), n);
    case GgmlType::Q5_1:
      return quantize_row_q5_1(src, static_cast<BlockQ5_1*>(dst), n);
    case GgmlType::Q4_K:
      return quantize_row_q4_k(src, static_cast<BlockQ4_K*>(dst), n);
    case GgmlType::Q5_K:
      return quantize_row_q5_k(src, static_cast<BlockQ5_K*>(dst), n);
    case GgmlType::Q6_K:
      return quantize_row_q6_k(src, static_cast<BlockQ6_K*>(dst), n);
    case GgmlType::IQ4_XS:
      return quantize_row_iq4_xs(src, static_cast<BlockIQ4_XS*>(dst), n);
    case GgmlType::Q5_0:
      return quantize_row_q5_0(src, static_cast<BlockQ5_0*>(dst), n);
    case GgmlType::IQ4_NL:
      return quantize_row_iq4_nl(src, static_cast<BlockIQ4_NL*>(dst), n);
    case GgmlType::MXFP4:
      return quantize_row_mxfp4(src, static_cast<BlockMXFP4*>(dst), n);
    default:
      break;
  }
}

}  // namespace kvforge
