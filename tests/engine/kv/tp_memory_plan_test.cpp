// engine/kv/tp_memory_plan: one rank's weights and KV at tp ranks, KV heads
// split up to n_kv_head ranks and replicated beyond.
#include "engine/kv/tp_memory_plan.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace kvforge {
namespace {

ModelShape llama_2_70b() { return *ModelShape::preset("llama-2-70b"); }

TEST(TpMemoryPlan, SplitBytesAddUpToTheWholeModel) {
  const ModelShape s = llama_2_70b();
  EXPECT_EQ(weight_split_bytes(s, GgmlType::F16).total(), weight_bytes(s, GgmlType::F16));
}

TEST(TpMemoryPlan, Llama2_70bOverFourRanksIsAboutAQuarterPlusTheEmbedding) {
  const ModelShape s = llama_2_70b();
  const WeightSplitBytes w = weight_split_bytes(s, GgmlType::F16);
  const TpRankPlan p = plan_tp_rank(s, w, 4);
  EXPECT_EQ(p.kv_heads_per_rank, 2);
  EXPECT_EQ(p.kv_replicas, 1);
  EXPECT_NEAR(double(p.weight_bytes) / kGiB, 32.49, 0.01);  // 128.48 / 4 + embedding 0.98 * 3/4
  EXPECT_EQ(kv_bytes_per_token(p.rank_shape, {KvDtype::F16, KvDtype::F16}) * 4,
            kv_bytes_per_token(s, {KvDtype::F16, KvDtype::F16}));
}

TEST(TpMemoryPlan, BeyondTheKvHeadsEachRankHoldsOneReplicated) {
  const ModelShape s = llama_2_70b();  // 8 KV heads
  const WeightSplitBytes w = weight_split_bytes(s, GgmlType::F16);
  const TpRankPlan p8 = plan_tp_rank(s, w, 8), p16 = plan_tp_rank(s, w, 16);
  EXPECT_EQ(p16.kv_heads_per_rank, 1);
  EXPECT_EQ(p16.kv_replicas, 2);
  EXPECT_EQ(kv_bytes_per_token(p16.rank_shape, {KvDtype::F16, KvDtype::F16}),
            kv_bytes_per_token(p8.rank_shape, {KvDtype::F16, KvDtype::F16}));
  EXPECT_EQ(p8.weight_bytes - p16.weight_bytes, w.divided / 8 - w.divided / 16);
  EXPECT_NE(describe_kv_sharding(8, 16).find("replicated"), std::string::npos);
}

TEST(TpMemoryPlan, RefusesRankCountsThatDoNotDivide) {
  const ModelShape s = llama_2_70b();
  const WeightSplitBytes w = weight_split_bytes(s, GgmlType::F16);
  EXPECT_THROW(plan_tp_rank(s, w, 3), std::invalid_argument);
  EXPECT_THROW(plan_tp_rank(s, w, 0), std::invalid_argument);
}

// Mixtures split each expert (routers whole); hybrids their linear-attention
// heads, with the recurrent state that goes with them.
TEST(TpMemoryPlan, ExpertsAndLinearHeadsSplitWithTheirState) {
  for (const char* name : {"qwen3-30b-a3b", "gpt-oss-20b", "qwen3.5-35b-a3b"}) {
    const ModelShape s = *ModelShape::preset(name);
    const WeightSplitBytes w = weight_split_bytes(s, GgmlType::Q8_0);
    EXPECT_EQ(w.total(), weight_bytes(s, GgmlType::Q8_0)) << name;
    EXPECT_GE(w.whole, uint64_t(s.n_layer * s.n_embd * s.n_expert)) << name;  // the routers
    const TpRankPlan p = plan_tp_rank(s, w, 2);
    EXPECT_EQ(p.rank_shape.n_ff_exp * 2, s.n_ff_exp) << name;
    EXPECT_EQ(p.rank_shape.state_bytes_per_sequence * 2, s.state_bytes_per_sequence) << name;
    EXPECT_EQ(p.rank_shape.linear.n_k_heads * 2, s.linear.n_k_heads) << name;
  }
  ModelShape odd = *ModelShape::preset("qwen3.5-35b-a3b");
  odd.linear.n_k_heads = 6;
  odd.linear.n_v_heads = 12;
  odd.state_bytes_per_sequence = 0;
  EXPECT_THROW(plan_tp_rank(odd, weight_split_bytes(odd, GgmlType::Q8_0), 4),
               std::invalid_argument);
}

}  // namespace
}  // namespace kvforge
