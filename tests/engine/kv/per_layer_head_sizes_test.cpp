// Layers of different head sizes in the KV pool (Gemma 4: windowed heads half
// as wide as the full layers', ModelConfig::layer_head_dim). The layer groups
// fill a block by K/V width, a block is as large as its widest group, the
// planner counts what the pool allocates, and the paged engine with every KV
// format gives the bits of the sequence run alone (SequenceRunner's
// contiguous cache) whatever the block size, chunking and neighbours.
// Also layers of different KV-head counts (Gemma 4 31B and 26B-A4B: the
// windowed layers have their own count beside their own head size,
// ModelConfig::layer_n_kv_head): a layer's run in a block is [its KV
// heads][block_size] records; the config's bytes per token, the planner's,
// the paged pool's, a tensor-parallel rank's and the static cache's agree,
// and the paged and static engines give the dynamic bits.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

#include "engine/kv/block_manager.h"
#include "engine/kv/kv_layer_groups.h"
#include "engine/kv/kv_memory_plan.h"
#include "engine/kv/paged_kv_cache.h"
#include "engine/kv/tp_memory_plan.h"
#include "engine/static_pipeline/static_kv_cache.h"
#include "engine_test_util.h"
#include "paged_equals_alone.h"
#include "static_pipeline/static_test_util.h"

namespace kvforge {
namespace per_layer_head_sizes_test {  // named: the tests build in unity batches

// 9 layers (windows of 8 on 0, 1, 3, 4, 6, 7), the last 3 sharing K/V; full
// heads of 64, windowed of 32 (q4 groups 32 values along a head).
RandomModelSpec spec() {
  RandomModelSpec s = testing::tiny_spec("gemma4", 5);
  s.name = "gemma4-swa-heads";
  s.n_layer = 9;
  s.head_dim = 64;
  s.head_dim_swa = 32;
  s.sliding_window = 8;
  s.swa_pattern = 3;
  s.n_kv_shared = 3;
  return s;
}

const Model& model() {
  static const std::unique_ptr<Model> m = testing::make_test_model(spec());
  return *m;
}

// spec() with 1 KV head in the full layers (of 64) and 4 in the windowed
// ones (of 32), as the 31B: more, narrower KV heads in the windowed layers.
RandomModelSpec kv_heads_spec() {
  RandomModelSpec s = spec();
  s.name = "gemma4-kv-heads";
  s.seed = 6;
  s.n_kv_head = 1;
  s.n_kv_head_swa = 4;
  return s;
}

const Model& kv_heads_model() {
  static const std::unique_ptr<Model> m = testing::make_test_model(kv_heads_spec());
  return *m;
}

std::string name_of(KvFormat f) { return std::string(kv_dtype_name(f.k)); }

const KvFormat kFormats[] = {{},
                             {KvDtype::F16, KvDtype::F16},
                             {KvDtype::BF16, KvDtype::BF16},
                             {KvDtype::Int8, KvDtype::Int8},
                             {KvDtype::Q4, KvDtype::Q4}};

TEST(PerLayerHeadSizes, GroupsFillABlockByWidth) {
  const ModelConfig& c = model().config();
  ASSERT_EQ(c.layer_head_dim(4), 32);
  ASSERT_EQ(c.layer_head_dim(5), 64);
  // K/V kept by full layers 2, 5 (2 KV heads of 64: width 128 each) and
  // windowed 0, 1, 3, 4 (width 64 each): the capacity is the full layers'
  // 256, so one full group of 2 and one windowed group of 4.
  const KvLayerGroups g = KvLayerGroups::of(c);
  EXPECT_EQ(g.capacity, 256);
  EXPECT_EQ(g.windows(), (std::vector<int32_t>{0, 8}));
  EXPECT_EQ(g.slots, 4);
  EXPECT_EQ(g.groups[0].layers, (std::vector<int>{2, 5}));
  EXPECT_EQ(g.groups[1].layers, (std::vector<int>{0, 1, 3, 4}));
  // Equal widths keep the count rule: gemma3-4b's 5 full / 29 windowed.
  std::vector<int32_t> windows(34, 1024);
  for (int l = 5; l < 34; l += 6) windows[size_t(l)] = 0;
  EXPECT_EQ(KvLayerGroups::of_windows(windows, std::vector<int64_t>(34, 256)).groups.size(), 7u);
  EXPECT_EQ(KvLayerGroups::of_windows(windows).slots, 5);
}

// Bytes per token sum each layer's own width; the planner's block and
// bytes per token are the pool's, in every format.
TEST(PerLayerHeadSizes, PlannerCountsAsThePagedPool) {
  const ModelConfig& c = model().config();
  EXPECT_EQ(c.kv_bytes_per_token(4), size_t(2 * (2 * 128 + 4 * 64) * 4));
  const ModelShape s = ModelShape::from_config(c);
  EXPECT_EQ(s.head_dim_swa, 32);
  for (const KvFormat f : kFormats) {
    SCOPED_TRACE(name_of(f));
    const size_t block = PagedKvCache::block_bytes(c, 16, f);
    EXPECT_EQ(kv_block_bytes(s, f, 16), block);
    EXPECT_EQ(uint64_t(kv_pool_blocks(s, f, uint64_t(1) << 20, 16)), (uint64_t(1) << 20) / block);
  }
  // f32: the full group's 2 layers x 2 heads x 64 = the windowed group's 4 x 2 x 32.
  EXPECT_EQ(PagedKvCache::block_bytes(c, 16, {}), size_t(16 * 2 * 256 * 4));
  EXPECT_EQ(kv_bytes_per_token(s, {}), c.kv_bytes_per_token(4));
}

// Gemma 4 E2B's attention as a config (35 layers, 4 windowed of 512 then a
// full one, the last 20 shared; 1 KV head of 512 full, 256 windowed): the
// pool's bytes per token and block are kv-plan's gemma-4-e2b preset's.
TEST(PerLayerHeadSizes, Gemma4E2bPoolEqualsThePreset) {
  ModelConfig c;
  c.arch = Architecture::Gemma4;
  c.n_layer = 35;
  c.n_head = 8;
  c.n_kv_head = 1;
  c.head_dim = 512;
  c.head_dim_swa = 256;
  c.sliding_window = 512;
  c.n_kv_shared = 20;
  for (int l = 0; l < 35; ++l) c.swa_layers.push_back(l % 5 == 4 ? 0 : 1);
  const auto preset = ModelShape::preset("gemma-4-e2b");
  ASSERT_TRUE(preset);
  const KvFormat f16{KvDtype::F16, KvDtype::F16};
  EXPECT_EQ(c.kv_bytes_per_token(2), 18432u);  // 2 * (3 * 512 + 12 * 256) * 2
  EXPECT_EQ(kv_bytes_per_token(*preset, f16), c.kv_bytes_per_token(2));
  // 3 full layers (width 1536) in one group, the 12 windowed in 2 groups of 6.
  EXPECT_EQ(KvLayerGroups::of(c).groups.size(), 3u);
  for (const KvFormat f : kFormats)
    EXPECT_EQ(kv_block_bytes(*preset, f, 16), PagedKvCache::block_bytes(c, 16, f)) << name_of(f);
  EXPECT_EQ(PagedKvCache::block_bytes(c, 16, f16), size_t(16 * 2 * 1536 * 2));
}

class PerLayerHeadSizesFormats : public ::testing::TestWithParam<KvFormat> {};

TEST_P(PerLayerHeadSizesFormats, PagedBatchedChunkedEqualsAlone) {
  testing::expect_paged_equals_alone(model(), GetParam());
}

INSTANTIATE_TEST_SUITE_P(Formats, PerLayerHeadSizesFormats, ::testing::ValuesIn(kFormats),
                         [](const auto& p) { return name_of(p.param); });

// Full layers 2, 5: width 64 each; windowed 0, 1, 3, 4: 4 x 32 = 128 each.
// The capacity is the full layers' 128: a full group of 2 and windowed
// groups of one layer.
TEST(PerLayerKvHeads, GroupsAndAccountingAgree) {
  const ModelConfig& c = kv_heads_model().config();
  ASSERT_EQ(c.layer_n_kv_head(4), 4);
  ASSERT_EQ(c.layer_n_kv_head(5), 1);
  const KvLayerGroups g = KvLayerGroups::of(c);
  EXPECT_EQ(g.capacity, 128);
  EXPECT_EQ(g.groups[0].layers, (std::vector<int>{2, 5}));
  EXPECT_EQ(g.groups.size(), 5u);
  EXPECT_EQ(c.kv_bytes_per_token(4), size_t(2 * (2 * 64 + 4 * 128) * 4));
  const ModelShape s = ModelShape::from_config(c);
  EXPECT_EQ(s.n_kv_head_swa, 4);
  EXPECT_EQ(kv_bytes_per_token(s, {}), c.kv_bytes_per_token(4));
  for (const KvFormat f : kFormats) {
    SCOPED_TRACE(name_of(f));
    EXPECT_EQ(kv_block_bytes(s, f, 16), PagedKvCache::block_bytes(c, 16, f));
  }
  EXPECT_EQ(PagedKvCache::block_bytes(c, 16, {}), size_t(16 * 2 * 128 * 4));
  // The static cache at capacity (windows over it: rings of the capacity).
  ModelConfig wide = c;
  wide.sliding_window = 1000;
  const int32_t capacity = 32, slots = 2;
  const size_t mask = size_t(slots) * capacity;
  const size_t tags = 4 * size_t(slots) * capacity * sizeof(int32_t);
  EXPECT_EQ(StaticKvCache(wide, capacity, slots, {}).bytes(),
            size_t(slots) * capacity * c.kv_bytes_per_token(4) + mask + tags);
}

// A block's bytes for the disk tier come back as they were imported.
TEST(PerLayerKvHeads, BlockExportImportRoundTrips) {
  const ModelConfig& c = kv_heads_model().config();
  BlockManager blocks(4, 4, false, KvLayerGroups::of(c).windows());
  PagedKvCache cache(c, blocks, {});
  std::vector<uint8_t> in(cache.block_bytes()), out(cache.block_bytes());
  for (size_t i = 0; i < in.size(); ++i) in[i] = uint8_t(i * 7 % 251);
  cache.import_block(1, in);
  cache.export_block(1, out);
  EXPECT_EQ(out, in);
}

// 2 ranks: the windowed layers' 4 KV heads split 2 and 2, the full layers'
// one replicated; the plan's rank shape counts what a rank's config does.
TEST(PerLayerKvHeads, TensorParallelPlanCountsEachKind) {
  const ModelConfig& c = kv_heads_model().config();
  const ModelShape s = ModelShape::from_config(c);
  const TpRankPlan p = plan_tp_rank(s, weight_split_bytes(s, GgmlType::F32), 2);
  EXPECT_EQ(p.rank_shape.n_kv_head, 1);
  EXPECT_EQ(p.rank_shape.n_kv_head_swa, 2);
  const std::vector<GgmlType> types(size_t(c.n_layer), GgmlType::F32);
  const ModelConfig rank = TensorSplit::of(c, types, types, 0, 2).rank_config(c);
  EXPECT_EQ(kv_bytes_per_token(p.rank_shape, {}), rank.kv_bytes_per_token(4));
}

class PerLayerKvHeadsFormats : public ::testing::TestWithParam<KvFormat> {};

TEST_P(PerLayerKvHeadsFormats, PagedBatchedChunkedEqualsAlone) {
  testing::expect_paged_equals_alone(kv_heads_model(), GetParam());
}

INSTANTIATE_TEST_SUITE_P(Formats, PerLayerKvHeadsFormats,
                         ::testing::Values(KvFormat{}, KvFormat{KvDtype::Q4, KvDtype::Q4}),
                         [](const auto& p) { return name_of(p.param); });

// The static pipeline: two slots decoding together, with quantized KV,
// past the window; the same bits as the dynamic pass.
TEST(PerLayerKvHeads, StaticSlotsEqualDynamic) {
  const StaticConfig config =
      testing::static_config(40, 24, 8, {16, 32, 48, 64}, 2, KvFormat{KvDtype::F16, KvDtype::Int8});
  testing::expect_two_slots_equal_dynamic(kv_heads_model(), config, 2, testing::test_prompt(19, 1),
                                          testing::test_prompt(9, 2), 12);
}

}  // namespace per_layer_head_sizes_test
}  // namespace kvforge
