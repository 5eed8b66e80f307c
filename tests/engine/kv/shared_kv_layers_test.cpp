// Gemma 4's shared-KV layers in the KV accounting: the last n_kv_shared
// layers read an earlier layer's K/V (ModelConfig::kv_source) and hold no
// slot of the paged pool, so a block, the bytes per token and the memory
// plan count only the layers that keep K/V (the static cache too:
// static_pipeline/static_gemma4_test.cpp), and a tensor-parallel rank's
// share holds its heads of each layer.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "engine/kv/kv_layer_groups.h"
#include "engine/kv/kv_memory_plan.h"
#include "engine/kv/paged_kv_cache.h"
#include "engine/kv/tp_memory_plan.h"
#include "model/model.h"
#include "model/random_model.h"
#include "test_models.h"

namespace kvforge {
namespace {

RandomModelSpec gemma4_spec(int shared) { return testing::gemma4_test_spec(shared, 8); }

std::vector<uint8_t> bytes_of(int shared) {
  return make_random_model(gemma4_spec(shared)).to_bytes();
}

TEST(SharedKvLayers, SharedLayersHoldNoSlotAndNoBytes) {
  const std::vector<uint8_t> shared_bytes = bytes_of(3), own_bytes = bytes_of(0);
  const ModelConfig shared = ModelConfig::from_gguf(gguf::GgufFile::from_bytes(shared_bytes, "s"));
  const ModelConfig own = ModelConfig::from_gguf(gguf::GgufFile::from_bytes(own_bytes, "o"));
  // Keeping K/V: full layers 2, 5; windowed 0, 1, 3, 4 (2 slots, 3 groups).
  const KvLayerGroups g = KvLayerGroups::of(shared);
  EXPECT_EQ(g.slots, 2);
  EXPECT_EQ(g.windows(), (std::vector<int32_t>{0, 8, 8}));
  for (int l : {6, 7, 8}) {
    EXPECT_EQ(g.slot_of_layer[size_t(l)], -1) << l;
    EXPECT_EQ(g.group_of_layer[size_t(l)], -1) << l;
  }
  // All 9 keeping K/V: 3 full, 6 windowed (3 slots).
  EXPECT_EQ(KvLayerGroups::of(own).slots, 3);
  // Bytes per token: 6 of 9 layers (2 * kv_dim 64 * 4 bytes each in f32).
  EXPECT_EQ(shared.kv_bytes_per_token(4), size_t(6 * 2 * 64 * 4));
  EXPECT_EQ(own.kv_bytes_per_token(4), size_t(9 * 2 * 64 * 4));
  const KvFormat f32{};
  EXPECT_EQ(PagedKvCache::block_bytes(shared, 16, f32) * 3,
            PagedKvCache::block_bytes(own, 16, f32) * 2);
  EXPECT_EQ(kv_bytes_per_token(ModelShape::from_config(shared), f32), shared.kv_bytes_per_token(4));
}

// The planner's figures are the engine's: bytes per token, and the blocks a
// budget buys (PagedKvCache's block, 2 slots of the 6 layers keeping K/V).
TEST(SharedKvLayers, PlannerCountsAsThePagedPool) {
  const std::vector<uint8_t> bytes = bytes_of(3);
  const ModelConfig c = ModelConfig::from_gguf(gguf::GgufFile::from_bytes(bytes, "s"));
  const ModelShape s = ModelShape::from_config(c);
  EXPECT_EQ(s.n_shared_kv_layers, 3);
  EXPECT_EQ(s.n_shared_swa_layers, 2);
  EXPECT_EQ(s.n_swa_layers, 4);
  for (const KvFormat f : {KvFormat{}, KvFormat{KvDtype::F16, KvDtype::F16}}) {
    EXPECT_EQ(kv_bytes_per_token(s, f), c.kv_bytes_per_token(f.k == KvDtype::F16 ? 2 : 4));
    const uint64_t budget = 1 << 20;
    EXPECT_EQ(uint64_t(kv_pool_blocks(s, f, budget, 16)),
              budget / PagedKvCache::block_bytes(c, 16, f));
  }
  EXPECT_EQ(kv_bytes_per_token(without_kv_sharing(s), KvFormat{}), size_t(9 * 2 * 64 * 4));
}

// Gemma 4 E2B (kv-plan --preset gemma-4-e2b), one KV head, f16: 12 windowed
// layers of 256 and 3 full of 512 keep K/V, 2 * (12 * 256 + 3 * 512) * 2 =
// 18432 bytes per token; all 35 (28 windowed, 7 full) would keep
// 2 * (28 * 256 + 7 * 512) * 2 = 43008.
TEST(SharedKvLayers, Gemma4E2bPresetBytesPerToken) {
  const auto s = ModelShape::preset("gemma-4-e2b");
  ASSERT_TRUE(s);
  const KvFormat f16{KvDtype::F16, KvDtype::F16};
  EXPECT_EQ(kv_bytes_per_token(*s, f16), 18432u);
  EXPECT_EQ(kv_bytes_per_token(without_kv_sharing(*s), f16), 43008u);
}

// Each of 2 ranks holds its query heads and KV head of every layer in the
// layer's own head size (windowed heads of 16, full of 32); the shared
// layers have no K/V rows on any rank; the per-layer embeddings are whole
// on every rank, as kv-plan --tp counts them; the shared layers' FFNs are
// double wide (256 rows beside 128), each rank holding half of each layer's
// rows and columns. (The logits of 2 and 4 ranks against one process's bits:
// tests/engine/lockstep/tp_test.sh.)
// The memory plan counts each layer's FFN rows: double-wide shared layers
// (3 of 256 rows beside 128) add 3 * 128 rows of gate, up and down.
TEST(SharedKvLayers, DoubleWideFfnCountedPerLayer) {
  RandomModelSpec wide = gemma4_spec(3);
  wide.double_wide_ffn = true;
  const auto shape_of = [](const RandomModelSpec& spec) {
    const std::vector<uint8_t> bytes = make_random_model(spec).to_bytes();
    return ModelShape::from_config(ModelConfig::from_gguf(gguf::GgufFile::from_bytes(bytes, "g")));
  };
  const ModelShape narrow_shape = shape_of(gemma4_spec(3)), wide_shape = shape_of(wide);
  EXPECT_EQ(wide_shape.n_ff_all_layers, 6 * 128 + 3 * 256);
  EXPECT_EQ(wide_shape.n_matrix_params() - narrow_shape.n_matrix_params(), 3 * 64 * 3 * 128);
}

// kv-plan --tp takes a rank count only when every layer's FFN rows split:
// the narrowest layers' too.
TEST(SharedKvLayers, TensorParallelPlansSplitTheNarrowestFfn) {
  RandomModelSpec wide = gemma4_spec(3);
  wide.double_wide_ffn = true;
  const std::vector<uint8_t> bytes = make_random_model(wide).to_bytes();
  ModelShape s =
      ModelShape::from_config(ModelConfig::from_gguf(gguf::GgufFile::from_bytes(bytes, "g")));
  EXPECT_EQ(std::make_pair(s.n_ff, s.n_ff_min), std::make_pair(int64_t(256), int64_t(128)));
  EXPECT_EQ(plan_tp_rank(s, weight_split_bytes(s, GgmlType::F32), 2).rank_shape.n_ff_min, 64);
  s.n_ff = 12, s.n_ff_min = 6, s.n_ff_all_layers = 6 * 6 + 3 * 12;  // 4 ranks split 12, not 6
  try {
    plan_tp_rank(s, weight_split_bytes(s, GgmlType::F32), 4);
    ADD_FAILURE() << "4 ranks over FFNs of 6 rows were planned";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("6 FFN rows of the narrowest layers"), std::string::npos)
        << e.what();
  }
}

// Gemma 4's MoE variant keeps its dense FFN beside the experts: its shape
// counts both, so it differs from the dense file of the same spec by the
// routers and experts alone, and kv-plan --tp checks the dense rows too.
TEST(SharedKvLayers, Gemma4MoeShapeCountsTheDenseFfnBesideTheExperts) {
  const auto shape_of = [](const RandomModelSpec& spec) {
    const std::vector<uint8_t> bytes = make_random_model(spec).to_bytes();
    return ModelShape::from_config(ModelConfig::from_gguf(gguf::GgufFile::from_bytes(bytes, "g")));
  };
  RandomModelSpec moe = gemma4_spec(3);
  moe.gemma4_moe = true;
  const ModelShape dense_shape = shape_of(gemma4_spec(3)), moe_shape = shape_of(moe);
  EXPECT_TRUE(moe_shape.experts_beside_ffn);
  const int64_t per_layer = 64 * moe.n_expert + moe.n_expert * 3 * 64 * moe.n_ff_exp;
  EXPECT_EQ(moe_shape.n_matrix_params() - dense_shape.n_matrix_params(), 9 * per_layer);
  ModelShape odd = moe_shape;
  odd.n_ff = 130;  // the experts split over 2 ranks, the dense FFN does not
  try {
    plan_tp_rank(odd, weight_split_bytes(odd, GgmlType::F32), 4);
    ADD_FAILURE() << "4 ranks over a dense FFN of 130 rows were planned";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("130 FFN rows"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(plan_tp_rank(moe_shape, weight_split_bytes(moe_shape, GgmlType::F32), 2));
}

TEST(SharedKvLayers, TensorParallelRanksHoldTheirHeadsOfEachLayer) {
  RandomModelSpec spec = gemma4_spec(3);
  spec.head_dim_swa = 16;
  spec.double_wide_ffn = true;
  const std::vector<uint8_t> bytes = make_random_model(spec).to_bytes();
  const gguf::GgufFile file = gguf::GgufFile::from_bytes(bytes, "g4");
  const ModelConfig c = ModelConfig::from_gguf(file);
  const ModelWeights whole = ModelWeights::from_gguf(file, c, 0, 1);
  for (int rank = 0; rank < 2; ++rank) {
    const ModelWeights w = ModelWeights::from_gguf(file, c, rank, 2);
    EXPECT_EQ(w.split.attn_parts % 2, 0);
    for (int l = 0; l < c.n_layer; ++l) {
      SCOPED_TRACE("rank " + std::to_string(rank) + ", layer " + std::to_string(l));
      const LayerWeights& lw = w.layers[size_t(l)];
      const int64_t hd = c.layer_head_dim(l);
      EXPECT_EQ(lw.attn_q.rows, 2 * hd);  // 2 of 4 query heads
      EXPECT_EQ(lw.attn_k.data != nullptr, c.owns_kv(l));
      EXPECT_EQ(lw.attn_k.rows, c.owns_kv(l) ? hd : 0);  // 1 of 2 KV heads
      EXPECT_EQ(lw.attn_output.cols, 2 * hd);
      const int64_t ff = c.layer_n_ff(l) / 2;
      EXPECT_EQ(ff, c.owns_kv(l) ? 64 : 128);
      EXPECT_EQ(lw.ffn_gate.rows, ff);
      EXPECT_EQ(lw.ffn_down.cols, ff);
      EXPECT_EQ(
          static_cast<const float*>(lw.ffn_up.data),  // rows [rank ff, (rank + 1) ff)
          static_cast<const float*>(whole.layers[size_t(l)].ffn_up.data) + rank * ff * c.n_embd);
      EXPECT_EQ(lw.ple_gate.data, whole.layers[size_t(l)].ple_gate.data);
      EXPECT_EQ(lw.ple_proj.data, whole.layers[size_t(l)].ple_proj.data);
    }
    EXPECT_EQ(w.ple_model_proj.data, whole.ple_model_proj.data);
    EXPECT_EQ(w.ple_token_embd.data, whole.ple_token_embd.data);
  }
  uint64_t ple_bytes = 0;
  for (const gguf::TensorInfo& t : file.tensors())
    if (t.name.find("per_layer_") == 0 || t.name.ends_with(".inp_gate.weight") ||
        t.name.ends_with(".proj.weight"))
      ple_bytes += t.n_bytes;
  const WeightSplitBytes split = weight_split_bytes(file);
  EXPECT_GT(ple_bytes, 0u);
  EXPECT_GE(split.whole, ple_bytes + whole.token_embd.rows * whole.token_embd.cols * 4);
}

}  // namespace
}  // namespace kvforge
