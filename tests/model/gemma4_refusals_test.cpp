// What a gemma4 load refuses, naming the key or tensor: inconsistent
// windowed head sizes, expert keys and tensors that do not fit, shared-KV
// counts that leave no source layer of the right kind, per-layer head
// count arrays whose layers differ, and feed-forward width arrays of the
// wrong length or widths the tensors do not have.
#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "edited_model.h"
#include "engine/sequence_runner.h"
#include "test_models.h"

namespace kvforge {
namespace {

using testing::edited_model;
using testing::expect_mentions;
using testing::load_error;

RandomModelSpec gemma4_spec() { return testing::gemma4_test_spec(3, 8); }

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

// Per-layer head counts (llama.cpp reads attention.head_count and
// head_count_kv with get_key_or_arr: a scalar or one entry per layer).
gguf::Value per_layer(std::vector<uint32_t> counts) {
  std::vector<gguf::Value> items;
  for (uint32_t n : counts) items.push_back(gguf::Value::u32(n));
  return gguf::Value::array(gguf::ValueType::UINT32, std::move(items));
}

std::vector<float> prompt_logits(const Model& model, std::span<const int32_t> prompt) {
  ThreadPool pool(1);
  SequenceRunner runner(model, pool, {.n_ctx = 64, .max_batch = 64, .kv_format = {}});
  const std::span<const float> logits = runner.prefill(prompt);
  return {logits.begin(), logits.end()};
}

// Arrays whose entries are all equal are the scalar: the same config and
// the same logits as the file with scalars.
TEST(Gemma4HeadCountArrays, EqualEntriesAreTheScalar) {
  const auto with_arrays = Model::from_file(edited_model(gemma4_spec(), [](gguf::GgufWriter& w) {
    w.set("gemma4.attention.head_count", per_layer(std::vector<uint32_t>(9, 4)));
    w.set("gemma4.attention.head_count_kv", per_layer(std::vector<uint32_t>(9, 2)));
    w.set("gemma4.feed_forward_length", per_layer(std::vector<uint32_t>(9, 128)));
  }));
  const auto scalars = Model::from_file(edited_model(gemma4_spec(), [](gguf::GgufWriter&) {}));
  EXPECT_EQ(with_arrays->config().n_head, 4);
  EXPECT_EQ(with_arrays->config().n_kv_head, 2);
  EXPECT_EQ(with_arrays->config().n_ff, scalars->config().n_ff);
  const std::vector<int32_t> prompt = {1, 17, 40, 9, 200};
  EXPECT_EQ(prompt_logits(*with_arrays, prompt), prompt_logits(*scalars, prompt));
}

// Counts that differ between layers (KV heads: between layers of one kind,
// gemma4_kv_heads_test.cpp), a length other than block_count and entries
// that are not counts are refused naming the key.
TEST(Gemma4HeadCountArrays, DifferingOrMalformedArraysAreRefusedByName) {
  std::string what = load_error(edited_model(gemma4_spec(), [](gguf::GgufWriter& w) {
    w.set("gemma4.attention.head_count_kv", per_layer({2, 1, 2, 2, 2, 1, 2, 2, 1}));
  }));
  expect_mentions(what, {"gemma4.attention.head_count_kv: windowed layers 0 and 1",
                         "each kind of layer must have one count"});
  what = load_error(edited_model(gemma4_spec(), [](gguf::GgufWriter& w) {
    w.set("gemma4.attention.head_count", per_layer({4, 4, 4}));
  }));
  expect_mentions(what,
                  {"gemma4.attention.head_count: per-layer array of 3 entries", "block_count 9"});
  what = load_error(edited_model(gemma4_spec(), [](gguf::GgufWriter& w) {
    w.set("gemma4.attention.head_count_kv",
          gguf::Value::string_array(std::vector<std::string>(9, "2")));
  }));
  expect_mentions(what,
                  {"gemma4.attention.head_count_kv: per-layer array of non-negative integers"});
  what = load_error(edited_model(gemma4_spec(), [](gguf::GgufWriter& w) {
    w.set("gemma4.attention.head_count_kv", per_layer(std::vector<uint32_t>(9, 0)));
  }));
  expect_mentions(what, {"gemma4.attention.head_count_kv = 0 is out of range"});
}

// feed_forward_length may differ between layers (Gemma 4's double-wide FFN,
// gemma4_golden_test.cpp runs a file with it); an array of another length
// than block_count, an entry of 0, or widths the tensors do not have are
// refused naming the key or the tensor.
TEST(Gemma4FeedForwardArrays, WrongLengthsEntriesAndShapesAreRefusedByName) {
  std::string what = load_error(edited_model(gemma4_spec(), [](gguf::GgufWriter& w) {
    w.set("gemma4.feed_forward_length", per_layer({128, 128, 128, 128, 128, 128, 256, 256}));
  }));
  expect_mentions(what,
                  {"gemma4.feed_forward_length: per-layer array of 8 entries", "block_count 9"});
  what = load_error(edited_model(gemma4_spec(), [](gguf::GgufWriter& w) {
    w.set("gemma4.feed_forward_length", per_layer({128, 128, 128, 128, 128, 128, 0, 256, 256}));
  }));
  expect_mentions(what, {"gemma4.feed_forward_length = 0 is out of range"});
  // Layers 6-8 said to be 256 wide, their tensors 128.
  what = load_error(edited_model(gemma4_spec(), [](gguf::GgufWriter& w) {
    w.set("gemma4.feed_forward_length", per_layer({128, 128, 128, 128, 128, 128, 256, 256, 256}));
  }));
  expect_mentions(what, {"blk.6.ffn_gate.weight"});
}

// The double-wide file: the shared layers' FFNs have twice the rows, and the
// same file with the narrow layers' rows written as an equal array is refused
// at the wide tensors.
TEST(Gemma4FeedForwardArrays, DoubleWideLayersLoadWithTheirOwnRows) {
  RandomModelSpec spec = gemma4_spec();
  spec.double_wide_ffn = true;
  const auto model = testing::make_test_model(spec);
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.n_ff, 256);
  for (int l = 0; l < c.n_layer; ++l) {
    EXPECT_EQ(c.layer_n_ff(l), l >= 6 ? 256 : 128) << "layer " << l;
    const LayerWeights& w = model->weights().layers[size_t(l)];
    EXPECT_EQ(w.ffn_gate.rows, c.layer_n_ff(l));
    EXPECT_EQ(w.ffn_up.rows, c.layer_n_ff(l));
    EXPECT_EQ(w.ffn_down.cols, c.layer_n_ff(l));
  }
  const std::string what = load_error(edited_model(spec, [](gguf::GgufWriter& w) {
    w.set("gemma4.feed_forward_length", per_layer(std::vector<uint32_t>(9, 128)));
  }));
  expect_mentions(what, {"blk.6.ffn_gate.weight"});
}

}  // namespace
}  // namespace kvforge
