#include "app/tools/quantize_recipe.h"

#include <array>
#include <cctype>
#include <optional>
#include <stdexcept>

#include "app/ascii_case.h"
#include "core/formats/row_codec.h"

namespace kvforge {
namespace {

// llama-quantize's names and llama_ftype_get_default_type (src/llama-quant.cpp).
constexpr std::array kMixtures = {
    QuantMixture{"Q4_0", LlamaFtype::MOSTLY_Q4_0, GgmlType::Q4_0},
    QuantMixture{"Q4_1", LlamaFtype::MOSTLY_Q4_1, GgmlType::Q4_1},
    QuantMixture{"Q5_0", LlamaFtype::MOSTLY_Q5_0, GgmlType::Q5_0},
    QuantMixture{"Q5_1", LlamaFtype::MOSTLY_Q5_1, GgmlType::Q5_1},
    QuantMixture{"Q2_K", LlamaFtype::MOSTLY_Q2_K, GgmlType::Q2_K},
    QuantMixture{"Q3_K_S", LlamaFtype::MOSTLY_Q3_K_S, GgmlType::Q3_K},
    QuantMixture{"Q3_K_M", LlamaFtype::MOSTLY_Q3_K_M, GgmlType::Q3_K},
    QuantMixture{"Q3_K_L", LlamaFtype::MOSTLY_Q3_K_L, GgmlType::Q3_K},
    QuantMixture{"IQ4_NL", LlamaFtype::MOSTLY_IQ4_NL, GgmlType::IQ4_NL},
    QuantMixture{"IQ4_XS", LlamaFtype::MOSTLY_IQ4_XS, GgmlType::IQ4_XS},
    QuantMixture{"Q4_K_S", LlamaFtype::MOSTLY_Q4_K_S, GgmlType::Q4_K},
    QuantMixture{"Q4_K_M", LlamaFtype::MOSTLY_Q4_K_M, GgmlType::Q4_K},
    QuantMixture{"Q5_K_S", LlamaFtype::MOSTLY_Q5_K_S, GgmlType::Q5_K},
    QuantMixture{"Q5_K_M", LlamaFtype::MOSTLY_Q5_K_M, GgmlType::Q5_K},
    QuantMixture{"Q6_K", LlamaFtype::MOSTLY_Q6_K, GgmlType::Q6_K},
    QuantMixture{"Q8_0", LlamaFtype::MOSTLY_Q8_0, GgmlType::Q8_0},
};

// general.file_type of a file whose matrices are all of one type that is not itself a
// mixture's name: the id llama-quantize writes for that name (it reads Q3_K, Q4_K and Q5_K
// as aliases of the _M mixtures).
std::optional<LlamaFtype> single_type_ftype(GgmlType t) {
  switch (t) {
    case GgmlType::F32:
      return LlamaFtype::ALL_F32;
    case GgmlType::F16:
      return LlamaFtype::MOSTLY_F16;
    case GgmlType::BF16:
      return LlamaFtype::MOSTLY_BF16;
    case GgmlType::Q3_K:
      return LlamaFtype::MOSTLY_Q3_K_M;
    case GgmlType::Q4_K:
      return LlamaFtype::MOSTLY_Q4_K_M;
    case GgmlType::Q5_K:
      return LlamaFtype::MOSTLY_Q5_K_M;
    default:
      for (const QuantMixture& m : kMixtures)
        if (m.base == t) return m.ftype;
      return std::nullopt;
  }
}

}  // namespace

std::span<const QuantMixture> quant_mixtures() { return kMixtures; }

std::string_view file_type_name(uint32_t ftype) {
  switch (LlamaFtype(ftype)) {
    case LlamaFtype::ALL_F32:
      return "F32";
    case LlamaFtype::MOSTLY_F16:
      return "F16";
    case LlamaFtype::MOSTLY_BF16:
      return "BF16";
    default:
      for (const QuantMixture& m : kMixtures)
        if (uint32_t(m.ftype) == ftype) return m.name;
      return {};
  }
}

std::string quantizable_type_list() {
  std::string out;
  for (uint32_t id = 0; id < 64; ++id) {
    const auto traits = type_traits(id);
    if (!traits || !is_quantizable_type(GgmlType(id)) || !single_type_ftype(GgmlType(id))) continue;
    out += (out.empty() ? "" : ", ") + std::string(traits->name);
  }
  return out;
}

std::string quant_mixture_list() {
  std::string out;
  for (const QuantMixture& m : kMixtures) out += (out.empty() ? "" : ", ") + std::string(m.name);
  return out;
}

QuantRecipe parse_quant_recipe(std::string_view name, bool pure) {
  for (const QuantMixture& m : kMixtures)
    if (equals_ignoring_case(name, m.name)) return {std::string(m.name), m.ftype, m.base, pure};
  const std::optional<GgmlType> t = parse_type_name(name);
  const std::optional<LlamaFtype> ftype = t ? single_type_ftype(*t) : std::nullopt;
  if (!t || !ftype || !is_quantizable_type(*t))
    throw std::invalid_argument("unknown or unsupported --type '" + std::string(name) +
                                "': expected a single type (" + quantizable_type_list() +
                                ") or a mixture (" + quant_mixture_list() + ")");
  return {std::string(type_name(*t)), *ftype, *t, true};
}

}  // namespace kvforge
