// The RoPE keys, read as llama.cpp reads them (llama_model::load_hparams and
// llama_context's constructor): the defaults, the scaling types, and YaRN's
// magnitude correction derived from the factor.
#include <algorithm>
#include <cmath>
#include <string>

#include "model/model_config_parts.h"

namespace kvforge::config_detail {
namespace {

// A base of 1 or less would make every frequency 1 or grow with the dimension.
constexpr FloatRange kFreqBase{.min = 1};

RopeScaling scaling_type(const gguf::GgufFile& f, const std::string& key) {
  // llama.cpp reads a missing type as "linear" (with factor 1 when no factor is given).
  const std::string name = f.get_string_or(key, "linear");
  if (name == "none") return RopeScaling::None;
  if (name == "linear") return RopeScaling::Linear;
  if (name == "yarn") return RopeScaling::Yarn;
  if (name == "longrope") return RopeScaling::LongRope;
  fail(f, key + " = '" + name + "' is not a RoPE scaling kvforge implements (none, linear, yarn, " +
              "longrope)");
}

// YaRN's attention magnitude for a context scaled by `factor` (1 + 0.1 ln factor above 1).
float yarn_mscale(float factor) { return factor <= 1.0f ? 1.0f : 0.1f * std::log(factor) + 1.0f; }

// Converters copy YaRN's parameters from the Hugging Face config; llama.cpp
// reads them for other architectures only and computes these with its own
// values. A file stating those values is fine; another value would be
// computed differently from what the file says, so it is refused.
void check_yarn_key(const gguf::GgufFile& f, const std::string& key, float computed) {
  if (!f.has(key)) return;
  const float stated = f.get_f32(key);
  // Written so that a NaN is refused too.
  if (!(std::abs(stated - computed) <= 1e-5f * std::max(1.0f, std::abs(computed))))
    fail(f, key + " = " + float_str(stated) + ", but kvforge (as llama.cpp for this " +
                "architecture) computes YaRN with " + float_str(computed));
}

}  // namespace

void read_rope(const gguf::GgufFile& f, ModelConfig& c) {
  const std::string a = c.arch_name + ".";
  RopeConfig& r = c.rope;
  r.freq_base = float_key(f, a + "rope.freq_base", 10000.0f, kFreqBase);
  c.rope_scaling = scaling_type(f, a + "rope.scaling.type");
  const std::string factor_key =
      f.has(a + "rope.scaling.factor") ? a + "rope.scaling.factor" : a + "rope.scale_linear";
  // 0 = no scaling, as llama.cpp reads it; a positive factor's inverse must be a float too.
  const float factor = float_key(f, factor_key, 0.0f, {.min = 0, .min_inclusive = true});
  if (factor > 0.0f && !std::isfinite(1.0f / factor))
    fail(f, factor_key + " = " + float_str(factor) + ", expected 0 (none) or a factor whose " +
                "inverse is finite");
  r.freq_scale = factor == 0.0f || c.rope_scaling == RopeScaling::None ? 1.0f : 1.0f / factor;
  r.n_ctx_orig = optional(f, a + "rope.scaling.original_context_length", c.n_ctx_train, 1u << 24);
  const float attn_factor = float_key(f, a + "rope.scaling.attn_factor", 1.0f, {.min = 0});
  r.ext_factor = c.rope_scaling == RopeScaling::Yarn ? 1.0f : 0.0f;
  r.attn_factor = 1.0f;
  if (r.ext_factor != 0.0f) {
    // llama.cpp's context takes yarn_mscale(factor) and divides out the
    // 1 + 0.1 ln(factor) that its rope kernel multiplies back in.
    const float s = 1.0f / r.freq_scale;
    r.attn_factor = yarn_mscale(s) * (1.0f / (1.0f + 0.1f * std::log(s)));
  }
  r.attn_factor *= attn_factor;
  const bool yarn = c.rope_scaling == RopeScaling::Yarn;
  check_yarn_key(f, a + "rope.scaling.yarn_ext_factor", r.ext_factor);
  check_yarn_key(f, a + "rope.scaling.yarn_beta_fast", yarn ? r.beta_fast : 32.0f);
  check_yarn_key(f, a + "rope.scaling.yarn_beta_slow", yarn ? r.beta_slow : 1.0f);
  // The magnitude the rope kernel ends up with: attn_factor · (1 + 0.1 ln factor).
  check_yarn_key(f, a + "rope.scaling.yarn_attn_factor",
                 yarn ? yarn_mscale(1.0f / r.freq_scale) : 1.0f);

  // Sliding-window layers: gemma's have their own base and no scaling;
  // gpt-oss's may have their own base, scaled as the full layers.
  c.rope_swa = r;
  if (c.arch == Architecture::Gemma2 || c.arch == Architecture::GptOss) {
    c.rope_swa.freq_base = float_key(f, a + "rope.freq_base_swa", r.freq_base, kFreqBase);
  } else if (c.arch == Architecture::Gemma3 || c.arch == Architecture::Gemma4) {
    c.rope_swa.freq_base = float_key(f, a + "rope.freq_base_swa", 10000.0f, kFreqBase);
    c.rope_swa.freq_scale = 1.0f;
  }
}

}  // namespace kvforge::config_detail
