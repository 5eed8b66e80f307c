// gpt-oss on the static pipeline: attention sinks in both kinds of layer
// (windowed layers through attend_queries over the window, full layers over
// exactly [0, pos] since the masked kernel has no sink term), the mixture of
// experts with its biases and clamp, YaRN. Static logits must equal the
// dynamic ones bit for bit, on the llama.cpp golden files (f32 and MXFP4
// experts) and on a random file with quantized KV and two slots.
#include <gtest/gtest.h>

#include <filesystem>

#include "static_test_util.h"
#include "testdata.h"

namespace kvforge {
namespace {

using testing::test_prompt;

// Windows of 8 on layers 0 and 2, sinks on every layer (data/gpt_oss/README.md):
// a prompt of 17 in chunks of 8, then through every variant to the capacity.
TEST(StaticGptOss, GoldenFilesRunStaticallyWithTheDynamicBits) {
  const auto dir = testing::source_dir() / "tests/model/data/gpt_oss";
  for (const char* name : {"gpt-oss-f32.gguf", "gpt-oss-mxfp4_moe.gguf"}) {
    SCOPED_TRACE(name);
    const auto model = Model::load(dir / name);
    ASSERT_TRUE(model->config().attn_sinks);
    testing::expect_golden_file_runs_statically(*model);
  }
}

RandomModelSpec gpt_oss_spec() {
  RandomModelSpec spec = testing::tiny_spec("gpt-oss", 5);
  spec.sliding_window = 6;
  spec.head_dim = 32;  // 4-bit KV groups hold 32 values
  return spec;
}

// Int8 and 4-bit KV records under the sinks, two slots decoding together.
TEST(StaticGptOss, QuantizedKvAndTwoSlotsEqualDynamic) {
  const auto model = testing::make_test_model(gpt_oss_spec());
  for (const KvFormat kv :
       {KvFormat{KvDtype::Int8, KvDtype::Int8}, KvFormat{KvDtype::Q4, KvDtype::F16}}) {
    testing::expect_two_slots_equal_dynamic(*model, testing::small_static_config(2, kv), 3,
                                            test_prompt(19, 1), test_prompt(5, 2), 10);
  }
}

}  // namespace
}  // namespace kvforge
