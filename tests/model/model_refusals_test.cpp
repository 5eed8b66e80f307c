// What kvforge does not implement is refused at load, naming it and the
// file, never skipped: an unknown architecture, an `<arch>.*` key that
// changes the math, an unknown RoPE scaling type, a tensor nothing reads.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"
#include "edited_model.h"
#include "model/model.h"
#include "model/random_model.h"
#include "testdata.h"

namespace kvforge {
namespace {

using testing::edited_model;
using testing::expect_mentions;
using testing::load_error;

TEST(ModelRefusals, UnknownArchitectureNamesTheSupportedOnes) {
  const std::string what = load_error(edited_model(RandomModelSpec{}, [](gguf::GgufWriter& w) {
    w.set("general.architecture", gguf::Value::string("mamba"));
  }));
  expect_mentions(what, {"edited.gguf", "'mamba'", "llama, qwen2, qwen3, gemma2, gemma3, phi3"});
}

TEST(ModelRefusals, UnknownRopeScalingType) {
  const std::string what = load_error(edited_model(RandomModelSpec{}, [](gguf::GgufWriter& w) {
    w.set("llama.rope.scaling.type", gguf::Value::string("dynamic-ntk"));
  }));
  expect_mentions(what, {"edited.gguf", "llama.rope.scaling.type", "'dynamic-ntk'", "yarn"});
}

TEST(ModelRefusals, ArchitectureKeysKvforgeDoesNotImplement) {
  // Keys llama.cpp applies for some architectures (or that change the math
  // in the original model) that kvforge does not read.
  for (const char* key :
       {"llama.attention.scale", "llama.rope.scaling.yarn_log_multiplier", "llama.logit_scale",
        "llama.expert_count", "llama.rope.freq_base_swa", "llama.attn_logit_softcapping"}) {
    SCOPED_TRACE(key);
    const std::string what = load_error(edited_model(
        RandomModelSpec{}, [&](gguf::GgufWriter& w) { w.set(key, gguf::Value::f32(2.0f)); }));
    expect_mentions(what, {"edited.gguf", key, "does not implement"});
  }
}

TEST(ModelRefusals, YarnKeysAreAcceptedOnlyWhenTheyStateWhatIsComputed) {
  RandomModelSpec spec;
  spec.rope_scaling = "yarn";
  spec.rope_factor = 4;
  spec.rope_orig_ctx = 16;
  const auto model = Model::from_file(edited_model(spec, [](gguf::GgufWriter& w) {
    w.set("llama.rope.scaling.yarn_beta_fast", gguf::Value::f32(32.0f));
    w.set("llama.rope.scaling.yarn_beta_slow", gguf::Value::f32(1.0f));
    w.set("llama.rope.scaling.yarn_ext_factor", gguf::Value::f32(1.0f));
    w.set("llama.rope.scaling.yarn_attn_factor", gguf::Value::f32(1.0f + 0.1f * std::log(4.0f)));
  }));
  EXPECT_EQ(model->config().rope_scaling, RopeScaling::Yarn);
  const std::string what = load_error(edited_model(spec, [](gguf::GgufWriter& w) {
    w.set("llama.rope.scaling.yarn_beta_fast", gguf::Value::f32(16.0f));
  }));
  expect_mentions(what, {"llama.rope.scaling.yarn_beta_fast = 16", "computes YaRN with 32"});
}

TEST(ModelRefusals, InertAndZeroKeysAreAccepted) {
  const auto model = Model::from_file(edited_model(RandomModelSpec{}, [](gguf::GgufWriter& w) {
    w.set("llama.rope.scaling.finetuned", gguf::Value::boolean(true));
    w.set("llama.expert_count", gguf::Value::u32(0));
    w.set("llama.attention.layer_norm_epsilon", gguf::Value::f32(1e-5f));
    w.set("llama.pooling_type", gguf::Value::u32(3));  // embeddings' (app/embedding)
  }));
  EXPECT_EQ(model->config().arch, Architecture::Llama);
}

TEST(ModelRefusals, TensorsNothingReadsAreRefused) {
  // An unknown tensor, a bias kvforge does not apply, a gemma2 output.weight
  // (gemma2 always multiplies by the embeddings), and rope_freqs on qwen3
  // (llama.cpp reads it for llama only).
  struct Case {
    const char* arch;
    const char* tensor;
  };
  for (const Case& c : {Case{"llama", "blk.0.attn_gate.weight"},
                        Case{"llama", "blk.1.attn_output.bias"}, Case{"llama", "ffn_down.bias"},
                        Case{"gemma2", "output.weight"}, Case{"qwen3", "rope_freqs.weight"}}) {
    SCOPED_TRACE(c.tensor);
    RandomModelSpec spec;
    spec.arch = c.arch;
    const std::string what = load_error(edited_model(
        spec, [](gguf::GgufWriter&) {}, c.tensor));
    expect_mentions(what, {"edited.gguf", c.tensor, "not used by kvforge"});
  }
}

TEST(ModelRefusals, KnownInertTensorIsAccepted) {
  const auto model = Model::from_file(edited_model(
      RandomModelSpec{}, [](gguf::GgufWriter&) {}, "blk.0.attn_rot_embd"));
  EXPECT_EQ(model->config().n_layer, 2);
}

TEST(ModelRefusals, WrongShapedRopeFactors) {
  RandomModelSpec spec;
  spec.llama3_rope_freqs = true;
  const gguf::GgufFile good = gguf::GgufFile::from_bytes(make_random_model(spec).to_bytes());
  const gguf::TensorInfo* t = good.find_tensor("rope_freqs.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dims[0], 8u);  // head_dim 16 / 2
  // A rope_freqs of 4 entries (the helper's extra tensor) for 8 pairs.
  spec.llama3_rope_freqs = false;
  const std::string what = load_error(edited_model(
      spec, [](gguf::GgufWriter&) {}, "rope_freqs.weight"));
  expect_mentions(what, {"rope_freqs.weight", "has shape [4], expected [8]"});
}

TEST(ModelRefusals, SlidingWindowPatternMustCoverEveryLayer) {
  RandomModelSpec spec;
  spec.arch = "gemma3";
  spec.sliding_window = 8;
  const std::string what = load_error(edited_model(spec, [](gguf::GgufWriter& w) {
    w.set("gemma3.attention.sliding_window_pattern",
          gguf::Value::array(gguf::ValueType::BOOL, {gguf::Value::boolean(true)}));
  }));
  expect_mentions(what, {"gemma3.attention.sliding_window_pattern", "1 entries, expected 2"});
}

// The real models' hyperparameters kept in the vocabulary-only files (as
// their converters wrote them: Llama 3 8B, Llama 2 7B, Phi-3 mini, Qwen2 7B)
// pass the key audit, so it refuses nothing a real file of these families
// carries; gpt2 is refused as an architecture kvforge does not compute.
TEST(ModelRefusals, RealFilesKeysPassTheAudit) {
  KVFORGE_REQUIRE_TESTDATA();
  for (const char* name : {"llama-bpe", "llama-spm", "phi-3", "qwen2"}) {
    SCOPED_TRACE(name);
    const gguf::GgufFile f =
        gguf::GgufFile::open(testing::testdata(std::string("vocab/ggml-vocab-") + name + ".gguf"));
    const ModelConfig c = ModelConfig::from_gguf(f);
    EXPECT_EQ(c.n_layer, 32);
    EXPECT_EQ(c.sliding_window, 0);
  }
  const gguf::GgufFile gpt2 =
      gguf::GgufFile::open(testing::testdata("vocab/ggml-vocab-gpt-2.gguf"));
  try {
    ModelConfig::from_gguf(gpt2);
    ADD_FAILURE() << "gpt2 accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported general.architecture 'gpt2'"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kvforge
