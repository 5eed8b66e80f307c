// What a gemma4 load refuses, naming the key or tensor: inconsistent
// windowed head sizes, expert keys and tensors that do not fit, and shared-KV
// counts that leave no source layer of the right kind.
#include <gtest/gtest.h>

#include "edited_model.h"

namespace kvforge {
namespace {

using testing::edited_model;
using testing::expect_mentions;
using testing::load_error;

// 9 layers, windows on 0, 1, 3, 4, 6, 7 (pattern 3), the last 3 shared.
RandomModelSpec gemma4_spec() {
  RandomModelSpec spec;
  spec.arch = "gemma4";
  spec.n_layer = 9;
  spec.head_dim = 32;
  spec.sliding_window = 8;
  spec.swa_pattern = 3;
  spec.n_kv_shared = 3;
  return spec;
}

// Per-layer head sizes are read (gemma4_golden_test.cpp runs a file with
// them); what llama.cpp refuses of them is refused by name, and a size the
// tensors do not have is a shape error naming the tensor.
TEST(Gemma4Refusals, InconsistentWindowedHeadSizesAreRefusedByName) {
  std::string what = load_error(edited_model(gemma4_spec(), [](gguf::GgufWriter& w) {
    w.set("gemma4.attention.value_length_swa", gguf::Value::u32(16));
  }));
  expect_mentions(what, {"gemma4.attention.value_length_swa = 16",
                         "differs from key_length_swa = 32", "unsupported"});
  what = load_error(edited_model(gemma4_spec(), [](gguf::GgufWriter& w) {
    w.set("gemma4.rope.dimension_count_swa", gguf::Value::u32(64));
  }));
  expect_mentions(what, {"gemma4.rope.dimension_count_swa = 64", "at most key_length_swa 32"});
  what = load_error(edited_model(gemma4_spec(), [](gguf::GgufWriter& w) {
    w.set("gemma4.attention.key_length_swa", gguf::Value::u32(16));
    w.set("gemma4.attention.value_length_swa", gguf::Value::u32(16));
    w.set("gemma4.rope.dimension_count_swa", gguf::Value::u32(16));
  }));
  expect_mentions(what, {"blk.0.attn_q.weight"});
}

// The MoE variant (gemma4_golden_test.cpp runs it): keys llama.cpp requires
// are required by name, expert shapes the tensors do not have are shape
// errors naming the tensor, and expert scales it would apply but kvforge
// does not read are refused as unused tensors.
TEST(Gemma4Refusals, ExpertKeysAndTensorsAreCheckedByName) {
  std::string what = load_error(edited_model(gemma4_spec(), [](gguf::GgufWriter& w) {
    w.set("gemma4.expert_count", gguf::Value::u32(8));
    w.set("gemma4.expert_used_count", gguf::Value::u32(2));
  }));
  expect_mentions(what, {"gemma4.expert_feed_forward_length"});
  RandomModelSpec moe = gemma4_spec();
  moe.gemma4_moe = true;
  what = load_error(edited_model(moe, [](gguf::GgufWriter& w) {
    w.set("gemma4.expert_feed_forward_length", gguf::Value::u32(16));
  }));
  expect_mentions(what, {"blk.0.ffn_gate_exps.weight", "has shape [64, 32, 8]"});
  what = load_error(edited_model(
      moe, [](gguf::GgufWriter&) {}, "blk.3.ffn_up_exps.scale"));
  expect_mentions(what, {"blk.3.ffn_up_exps.scale", "is not used"});
}

TEST(Gemma4Refusals, SharedLayersNeedASourceOfTheirKind) {
  // 4 shared: layers 0-4 keep K/V, layer 4 (windowed) is the last; the full
  // layer 5 would read layer 4's windowed K/V.
  std::string what = load_error(edited_model(gemma4_spec(), [](gguf::GgufWriter& w) {
    w.set("gemma4.attention.shared_kv_layers", gguf::Value::u32(4));
  }));
  expect_mentions(
      what, {"gemma4.attention.shared_kv_layers = 4", "layer 5 (window 0)", "layer 4 (window 8)"});
  what = load_error(edited_model(gemma4_spec(), [](gguf::GgufWriter& w) {
    w.set("gemma4.attention.shared_kv_layers", gguf::Value::u32(9));
  }));
  expect_mentions(what, {"gemma4.attention.shared_kv_layers = 9", "fewer than block_count 9"});
}

}  // namespace
}  // namespace kvforge
