#include "core/dtype.h"

#include <array>
#include <cctype>
#include <stdexcept>
#include <string>

namespace kvforge {
namespace {

struct Entry {
  GgmlType type;
  TypeTraits traits;
};

// Block geometry from the published ggml type table (ggml.c type_traits).
constexpr std::array kTypes = {
    Entry{GgmlType::F32, {"f32", 1, 4}},
    Entry{GgmlType::F16, {"f16", 1, 2}},
    Entry{GgmlType::Q4_0, {"q4_0", 32, 18}},
    Entry{GgmlType::Q4_1, {"q4_1", 32, 20}},
    Entry{GgmlType::Q5_0, {"q5_0", 32, 22}},
    Entry{GgmlType::Q5_1, {"q5_1", 32, 24}},
    Entry{GgmlType::Q8_0, {"q8_0", 32, 34}},
    Entry{GgmlType::Q8_1, {"q8_1", 32, 36}},
    Entry{GgmlType::Q2_K, {"q2_k", 256, 84}},
    Entry{GgmlType::Q3_K, {"q3_k", 256, 110}},
    Entry{GgmlType::Q4_K, {"q4_k", 256, 144}},
    Entry{GgmlType::Q5_K, {"q5_k", 256, 176}},
    Entry{GgmlType::Q6_K, {"q6_k", 256, 210}},
    Entry{GgmlType::Q8_K, {"q8_k", 256, 292}},
    Entry{GgmlType::IQ2_XXS, {"iq2_xxs", 256, 66}},
    Entry{GgmlType::IQ2_XS, {"iq2_xs", 256, 74}},
    Entry{GgmlType::IQ3_XXS, {"iq3_xxs", 256, 98}},
    Entry{GgmlType::IQ1_S, {"iq1_s", 256, 50}},
    Entry{GgmlType::IQ4_NL, {"iq4_nl", 32, 18}},
    Entry{GgmlType::IQ3_S, {"iq3_s", 256, 110}},
    Entry{GgmlType::IQ2_S, {"iq2_s", 256, 82}},
    Entry{GgmlType::IQ4_XS, {"iq4_xs", 256, 136}},
    Entry{GgmlType::I8, {"i8", 1, 1}},
    Entry{GgmlType::I16, {"i16", 1, 2}},
    Entry{GgmlType::I32, {"i32", 1, 4}},
    Entry{GgmlType::I64, {"i64", 1, 8}},
    Entry{GgmlType::F64, {"f64", 1, 8}},
    Entry{GgmlType::IQ1_M, {"iq1_m", 256, 56}},
    Entry{GgmlType::BF16, {"bf16", 1, 2}},
    Entry{GgmlType::TQ1_0, {"tq1_0", 256, 54}},
    Entry{GgmlType::TQ2_0, {"tq2_0", 256, 66}},
    Entry{GgmlType::MXFP4, {"mxfp4", 32, 17}},
};

}  // namespace

std::optional<TypeTraits> type_traits(uint32_t type_id) {
  for (const Entry& e : kTypes) {
    if (static_cast<uint32_t>(e.type) == type_id) return e.traits;
  }
  return std::nullopt;
}

TypeTraits type_traits(GgmlType t) {
  auto tr = type_traits(static_cast<uint32_t>(t));
  if (!tr) throw std::logic_error("type_traits: unlisted GgmlType " + std::to_string(uint32_t(t)));
  return *tr;
}

std::string_view type_name(GgmlType t) { return type_traits(t).name; }

std::optional<GgmlType> parse_type_name(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const Entry& e : kTypes) {
    if (e.traits.name == lower) return e.type;
  }
  return std::nullopt;
}

}  // namespace kvforge
