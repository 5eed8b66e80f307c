// Layers of different head sizes in the KV pool (Gemma 4: windowed heads half
// as wide as the full layers', ModelConfig::layer_head_dim). The layer groups
// fill a block by K/V width, a block is as large as its widest group, the
// planner counts what the pool allocates, and the paged engine with every KV
// format gives the bits of the sequence run alone (SequenceRunner's
// contiguous cache) whatever the block size, chunking and neighbours.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "engine/kv/kv_layer_groups.h"
#include "engine/kv/kv_memory_plan.h"
#include "engine/kv/paged_kv_cache.h"
#include "engine_test_util.h"
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

std::map<size_t, testing::Trace> paged_greedy(const std::vector<std::vector<int32_t>>& prompts,
                                              int max_tokens, KvFormat kv, int32_t block_size) {
  ThreadPool pool(2);
  testing::EngineRecorder rec;
  EngineOptions o;
  o.block_size = block_size;
  o.kv_blocks = 1024 / block_size;
  o.kv_format = kv;
  o.n_ctx = 64;
  o.max_batched_tokens = 7;  // prefill in chunks beside the decodes
  Engine e(model(), pool, rec.hook(o));
  std::map<size_t, RequestId> ids;
  for (size_t i = 0; i < prompts.size(); ++i)
    ids[i] = e.add_request(prompts[i], testing::greedy(max_tokens));
  while (e.has_unfinished()) rec.record(e.step());
  EXPECT_EQ(e.stats().kv_blocks_free, e.n_blocks());
  std::map<size_t, testing::Trace> out;
  for (const auto& [i, id] : ids) out[i] = rec.at(id, 0);
  return out;
}

class PerLayerHeadSizesFormats : public ::testing::TestWithParam<KvFormat> {};

// Prompts past the window (8) and across blocks; 12 greedy steps each.
TEST_P(PerLayerHeadSizesFormats, PagedBatchedChunkedEqualsAlone) {
  const KvFormat kv = GetParam();
  const std::vector<int32_t> lengths = {3, 11, 21};
  const int max_tokens = 12;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<testing::GreedyTrace> alone;
  for (int32_t len : lengths) {
    prompts.push_back(testing::test_prompt(size_t(len), len));
    alone.push_back(testing::dynamic_greedy(model(), prompts.back(), max_tokens - 1, 2, kv));
  }
  for (int32_t block_size : {4, 16}) {
    SCOPED_TRACE("block size " + std::to_string(block_size));
    const auto paged = paged_greedy(prompts, max_tokens, kv, block_size);
    for (size_t i = 0; i < prompts.size(); ++i) {
      const testing::Trace& p = paged.at(i);
      ASSERT_EQ(p.tokens, alone[i].tokens) << "prompt " << lengths[i];
      for (size_t s = 0; s < p.logits.size(); ++s)
        ASSERT_TRUE(testing::same_bits(p.logits[s], alone[i].logits[s]))
            << "prompt " << lengths[i] << ", step " << s;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, PerLayerHeadSizesFormats, ::testing::ValuesIn(kFormats),
                         [](const auto& p) { return name_of(p.param); });

}  // namespace per_layer_head_sizes_test
}  // namespace kvforge
