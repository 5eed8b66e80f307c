// Values that would load and then make every request fail or compute
// nonsense are refused at load, naming the file, the key (or tensor), the
// value and what was expected: a NaN or infinite hyperparameter, a RoPE
// frequency factor of zero, a sliding window of 0 tokens, a layer pattern of 0.
// The conventions real files use (phi3's window 0 for "none", a rope scaling
// factor of 0 for "none", a soft-cap of 0 for "none") still load.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"
#include "edited_model.h"
#include "model/model.h"
#include "model/random_model.h"

namespace kvforge {
namespace {

using testing::edited_model;
using testing::expect_mentions;
using testing::load_error;

constexpr float kInfinity = std::numeric_limits<float>::infinity();
constexpr float kNotANumber = std::numeric_limits<float>::quiet_NaN();

RandomModelSpec spec_of(const char* arch) {
  RandomModelSpec spec;
  spec.arch = arch;
  return spec;
}

// The load error of the random `arch` model with `key` set to `value`.
std::string error_with(const RandomModelSpec& spec, const std::string& key,
                       const gguf::Value& value) {
  return load_error(edited_model(spec, [&](gguf::GgufWriter& w) { w.set(key, value); }));
}

// The model of `spec` with entry `index` of the f32 tensor `tensor` set to `v`.
gguf::GgufFile with_tensor_entry(const RandomModelSpec& spec, const std::string& tensor,
                                 size_t index, float v) {
  return edited_model(
      spec, [](gguf::GgufWriter&) {}, "",
      [&](const std::string& name, std::vector<uint8_t>& data) {
        if (name == tensor) std::memcpy(data.data() + index * sizeof(float), &v, sizeof v);
      });
}

TEST(ModelValueRefusals, RopeFreqsMustBeFiniteAndPositive) {
  // Llama 3's rope_freqs divide the frequencies: NaN or 0 made every logit NaN.
  RandomModelSpec spec;
  spec.llama3_rope_freqs = true;
  for (const float v : {kNotANumber, 0.0f, -1.0f, kInfinity}) {
    SCOPED_TRACE(v);
    const std::string what = load_error(with_tensor_entry(spec, "rope_freqs.weight", 3, v));
    expect_mentions(
        what,
        {"edited.gguf", "tensor 'rope_freqs.weight' entry 3 = ", "expected a finite factor > 0"});
  }
  EXPECT_EQ(
      Model::from_file(with_tensor_entry(spec, "rope_freqs.weight", 3, 2.5f))->config().n_layer, 2);
}

TEST(ModelValueRefusals, LongRopeFactorsMustBeFiniteAndPositive) {
  RandomModelSpec spec = spec_of("phi3");
  spec.longrope_factors = true;
  for (const char* tensor : {"rope_factors_long.weight", "rope_factors_short.weight"}) {
    SCOPED_TRACE(tensor);
    const std::string what = load_error(with_tensor_entry(spec, tensor, 0, 0.0f));
    expect_mentions(what, {"edited.gguf", tensor, "entry 0 = 0, expected a finite factor > 0"});
  }
}

TEST(ModelValueRefusals, RopeFreqBaseMustBeFinite) {
  const RandomModelSpec llama;
  expect_mentions(error_with(llama, "llama.rope.freq_base", gguf::Value::f32(kInfinity)),
                  {"edited.gguf", "llama.rope.freq_base = inf, expected a finite value > 1"});
  // Stored as a float64 (the getter refuses only finite values beyond float range).
  expect_mentions(error_with(llama, "llama.rope.freq_base", gguf::Value::f64(-kInfinity)),
                  {"llama.rope.freq_base = -inf"});
  expect_mentions(error_with(llama, "llama.rope.freq_base", gguf::Value::f32(kNotANumber)),
                  {"llama.rope.freq_base = nan"});
  expect_mentions(error_with(llama, "llama.rope.freq_base", gguf::Value::f32(1.0f)),
                  {"llama.rope.freq_base = 1, expected a finite value > 1"});
}

TEST(ModelValueRefusals, SlidingWindowRopeBaseMustBeFinite) {
  for (const char* arch : {"gemma2", "gemma3"}) {
    SCOPED_TRACE(arch);
    const std::string key = std::string(arch) + ".rope.freq_base_swa";
    expect_mentions(error_with(spec_of(arch), key, gguf::Value::f32(kInfinity)),
                    {"edited.gguf", (key + " = inf, expected a finite value > 1").c_str()});
  }
}

TEST(ModelValueRefusals, SoftCapsMustBeFinite) {
  // c · tanh(x / c) with c = inf is NaN; 0 stays "no soft-capping".
  for (const char* key : {"gemma2.attn_logit_softcapping", "gemma2.final_logit_softcapping"}) {
    SCOPED_TRACE(key);
    expect_mentions(error_with(spec_of("gemma2"), key, gguf::Value::f32(kInfinity)),
                    {"edited.gguf", key, "= inf, expected a finite value >= 0"});
    expect_mentions(error_with(spec_of("gemma2"), key, gguf::Value::f32(-1.0f)),
                    {key, "= -1, expected a finite value >= 0"});
  }
  expect_mentions(error_with(spec_of("gemma3"), "gemma3.final_logit_softcapping",
                             gguf::Value::f32(kNotANumber)),
                  {"gemma3.final_logit_softcapping = nan"});
  const auto uncapped = Model::from_file(edited_model(spec_of("gemma3"), [](gguf::GgufWriter& w) {
    w.set("gemma3.final_logit_softcapping", gguf::Value::f32(0.0f));
  }));
  EXPECT_EQ(uncapped->config().final_softcap, 0.0f);
}

TEST(ModelValueRefusals, NormEpsilonMustBeSmallAndPositive) {
  for (const float v : {kNotANumber, 0.0f, 1.0f, kInfinity}) {
    SCOPED_TRACE(v);
    expect_mentions(error_with(RandomModelSpec{}, "llama.attention.layer_norm_rms_epsilon",
                               gguf::Value::f32(v)),
                    {"edited.gguf", "llama.attention.layer_norm_rms_epsilon = ",
                     "expected a finite value > 0 and < 1"});
  }
}

TEST(ModelValueRefusals, RopeScalingFactorsMustBeFinite) {
  RandomModelSpec linear;
  linear.rope_scaling = "linear";
  linear.rope_factor = 2;
  // A factor whose inverse overflows would scale every frequency to infinity.
  expect_mentions(error_with(linear, "llama.rope.scaling.factor", gguf::Value::f32(1e-40f)),
                  {"edited.gguf", "llama.rope.scaling.factor = ",
                   "expected 0 (none) or a factor whose inverse is finite"});
  expect_mentions(error_with(linear, "llama.rope.scaling.factor", gguf::Value::f32(kNotANumber)),
                  {"llama.rope.scaling.factor = nan, expected a finite value >= 0"});
  expect_mentions(error_with(linear, "llama.rope.scaling.attn_factor", gguf::Value::f32(kInfinity)),
                  {"llama.rope.scaling.attn_factor = inf, expected a finite value > 0"});
  // 0 = no scaling, as llama.cpp reads it.
  const auto unscaled = Model::from_file(edited_model(linear, [](gguf::GgufWriter& w) {
    w.set("llama.rope.scaling.factor", gguf::Value::f32(0.0f));
  }));
  EXPECT_EQ(unscaled->config().rope.freq_scale, 1.0f);
}

TEST(ModelValueRefusals, YarnKeysMustBeNumbers) {
  // A NaN compared unequal to nothing and was accepted as "what kvforge computes".
  RandomModelSpec yarn;
  yarn.rope_scaling = "yarn";
  yarn.rope_factor = 4;
  yarn.rope_orig_ctx = 16;
  for (const char* key :
       {"llama.rope.scaling.yarn_beta_fast", "llama.rope.scaling.yarn_beta_slow",
        "llama.rope.scaling.yarn_ext_factor", "llama.rope.scaling.yarn_attn_factor"}) {
    SCOPED_TRACE(key);
    expect_mentions(error_with(yarn, key, gguf::Value::f32(kNotANumber)),
                    {"edited.gguf", key, "= nan, but kvforge"});
  }
}

TEST(ModelValueRefusals, SlidingWindowOfZeroIsRefusedWhereItMeansNothing) {
  // gemma always has windows; llama and qwen say "none" by leaving the key out.
  for (const char* arch : {"gemma2", "gemma3", "llama", "qwen2"}) {
    SCOPED_TRACE(arch);
    const std::string key = std::string(arch) + ".attention.sliding_window";
    expect_mentions(error_with(spec_of(arch), key, gguf::Value::u32(0)),
                    {"edited.gguf", (key + " = 0, expected a window of at least 1 token").c_str()});
  }
  // llama.cpp's converter writes 0 for Phi-4 (phi3 without windows).
  const auto phi4 = Model::from_file(edited_model(spec_of("phi3"), [](gguf::GgufWriter& w) {
    w.set("phi3.attention.sliding_window", gguf::Value::u32(0));
  }));
  EXPECT_EQ(phi4->config().sliding_window, 0);
  EXPECT_EQ(phi4->config().window(0), 0);
}

TEST(ModelValueRefusals, SlidingWindowPatternOfZeroIsRefused) {
  RandomModelSpec spec = spec_of("gemma3");
  spec.sliding_window = 8;
  expect_mentions(error_with(spec, "gemma3.attention.sliding_window_pattern", gguf::Value::u32(0)),
                  {"edited.gguf", "gemma3.attention.sliding_window_pattern = 0, expected n >= 1"});
  // 2: every second layer global, as before.
  const auto model = Model::from_file(edited_model(spec, [](gguf::GgufWriter& w) {
    w.set("gemma3.attention.sliding_window_pattern", gguf::Value::u32(2));
  }));
  EXPECT_EQ(model->config().window(0), 8);
  EXPECT_EQ(model->config().window(1), 0);
}

}  // namespace
}  // namespace kvforge
