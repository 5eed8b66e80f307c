// Gemma 4 files whose windowed and full layers have different KV-head
// counts (the 31B and 26B-A4B: attention.head_count_kv written per layer,
// one count per kind of layer): how the array is read, what is refused by
// name, and how tensor parallelism splits each kind. The llama.cpp golden
// on such a file is gemma4_golden_test.cpp's gemma4-kv-heads-f32.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "edited_model.h"
#include "model/tensor_split.h"
#include "test_models.h"

namespace kvforge {
namespace gemma4_kv_heads_test {  // named: the tests build in unity batches

using testing::edited_model;
using testing::expect_mentions;
using testing::load_error;

// 9 layers, windows on 0, 1, 3, 4, 6, 7, the last 3 sharing K/V; 4 query
// heads over 1 KV head in the full layers and 2 in the windowed ones.
RandomModelSpec spec() {
  RandomModelSpec s = testing::gemma4_test_spec(3, 8);
  s.n_kv_head = 1;
  s.n_kv_head_swa = 2;
  return s;
}

gguf::Value per_layer(std::vector<uint32_t> counts) {
  std::vector<gguf::Value> items;
  for (uint32_t n : counts) items.push_back(gguf::Value::u32(n));
  return gguf::Value::array(gguf::ValueType::UINT32, std::move(items));
}

TEST(Gemma4KvHeads, ThePerLayerArrayGivesEachKindItsCount) {
  const auto model = Model::from_file(edited_model(spec(), [](gguf::GgufWriter&) {}));
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.n_kv_head, 1);
  EXPECT_EQ(c.n_kv_head_swa, 2);
  EXPECT_EQ(c.layer_n_kv_head(4), 2);
  EXPECT_EQ(c.layer_n_kv_head(5), 1);
  EXPECT_EQ(c.layer_n_kv_head(7), 2);  // shared, reading windowed layer 4's K/V
  EXPECT_EQ(c.layer_shape(4).gqa_group(), 2);
  EXPECT_EQ(c.layer_shape(5).gqa_group(), 4);
  EXPECT_EQ(c.max_gqa_group(), 4);
  EXPECT_EQ(c.max_kv_dim(), 64);
  EXPECT_TRUE(c.per_layer_heads());
  // K/V of 2 full layers (1 head of 32) and 4 windowed (2 heads of 32), f32.
  EXPECT_EQ(c.kv_bytes_per_token(4), size_t(2 * (2 * 32 + 4 * 64) * 4));
  EXPECT_EQ(model->weights().layers[4].attn_k.rows, 64);
  EXPECT_EQ(model->weights().layers[5].attn_k.rows, 32);
}

// One count for every layer of a kind, dividing the query heads, one entry
// per layer; a count that the tensors do not have is a shape error naming
// the tensor.
TEST(Gemma4KvHeads, ArraysThatDoNotFitAreRefusedByName) {
  std::string what = load_error(edited_model(spec(), [](gguf::GgufWriter& w) {
    w.set("gemma4.attention.head_count_kv", per_layer({2, 2, 1, 2, 2, 1}));
  }));
  expect_mentions(
      what, {"gemma4.attention.head_count_kv: per-layer array of 6 entries", "block_count 9"});
  what = load_error(edited_model(spec(), [](gguf::GgufWriter& w) {
    w.set("gemma4.attention.head_count_kv", per_layer({2, 4, 1, 2, 2, 1, 2, 2, 1}));
  }));
  expect_mentions(
      what, {"gemma4.attention.head_count_kv", "windowed layers 0 and 1", "have 2 and 4 KV heads"});
  what = load_error(edited_model(spec(), [](gguf::GgufWriter& w) {
    w.set("gemma4.attention.head_count_kv", per_layer({2, 2, 1, 2, 2, 2, 2, 2, 1}));
  }));
  expect_mentions(what, {"full-attention layers 2 and 5", "have 1 and 2 KV heads"});
  what = load_error(edited_model(spec(), [](gguf::GgufWriter& w) {
    w.set("gemma4.attention.head_count_kv", per_layer({3, 3, 1, 3, 3, 1, 3, 3, 1}));
  }));
  expect_mentions(
      what, {"gemma4.attention.head_count_kv[0] = 3", "does not divide attention.head_count = 4"});
  what = load_error(edited_model(spec(), [](gguf::GgufWriter& w) {
    w.set("gemma4.attention.head_count_kv", per_layer({4, 4, 1, 4, 4, 1, 4, 4, 1}));
  }));
  expect_mentions(what, {"blk.0.attn_k.weight"});
}

// Other architectures keep one count for all layers: a differing array is
// refused as before (llama.cpp's other loaders size every layer alike).
TEST(Gemma4KvHeads, OtherArchitecturesRefuseDifferingArrays) {
  RandomModelSpec g3 = spec();
  g3.arch = "gemma3";
  g3.n_kv_head_swa = 0;
  g3.n_kv_shared = 0;
  g3.n_embd_per_layer = 0;
  const std::string what = load_error(edited_model(g3, [](gguf::GgufWriter& w) {
    w.set("gemma3.attention.head_count_kv", per_layer({2, 2, 1, 2, 2, 1, 2, 2, 1}));
  }));
  expect_mentions(what,
                  {"gemma3.attention.head_count_kv: per-layer array [2, 2, 1", "is not supported"});
  RandomModelSpec llama = g3;
  llama.arch = "llama";
  llama.n_kv_head_swa = 2;
  EXPECT_THROW(make_random_model(llama), std::invalid_argument);
}

// Each kind splits over the ranks on its own: 2 ranks split the windowed
// layers' 2 KV heads and replicate the full layers' one; 3 ranks refuse
// naming the kind.
TEST(Gemma4KvHeads, TensorParallelismSplitsEachKind) {
  const auto model = Model::from_file(edited_model(spec(), [](gguf::GgufWriter&) {}));
  const ModelConfig& c = model->config();
  const std::vector<GgmlType> types(size_t(c.n_layer), GgmlType::F32);
  const TensorSplit s = TensorSplit::of(c, types, types, 1, 2);
  EXPECT_EQ(s.layer_n_kv_head(4), 1);
  EXPECT_EQ(s.layer_first_kv_head(4), 1);
  EXPECT_EQ(s.layer_n_kv_head(5), 1);
  EXPECT_EQ(s.layer_kv_replicas(5), 2);
  EXPECT_EQ(s.layer_first_kv_head(5), 0);
  const ModelConfig r = s.rank_config(c);
  EXPECT_EQ(r.layer_n_kv_head(4), 1);
  EXPECT_EQ(r.layer_n_kv_head(5), 1);
  EXPECT_EQ(r.kv_bytes_per_token(4), size_t(2 * (2 * 32 + 4 * 32) * 4));
  try {
    TensorSplit::of(c, types, types, 0, 3);
    ADD_FAILURE() << "3 ranks accepted";
  } catch (const std::invalid_argument& e) {
    expect_mentions(e.what(), {"over 3 ranks", "full-attention layers' 1 KV heads"});
  }
}

}  // namespace gemma4_kv_heads_test
}  // namespace kvforge
