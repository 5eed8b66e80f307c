// The KV disk tier on the static pipeline: a request admitted into a slot
// restores its prefix from files (written by an earlier static engine, or by
// the paged engine: one layout, one hash chain) and gives bit-identical
// log-probabilities to a cold run, for f16 and int8 KV.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "engine_test_util.h"
#include "static_test_util.h"
#include "temp_dir.h"

namespace kvforge::testing {
namespace {

namespace fs = std::filesystem;

// Each generated token with its log-probability and top-5 alternatives.
using Tokens = std::vector<GeneratedToken>;

Tokens run_one(Engine& e, std::span<const int32_t> prompt, int max_tokens) {
  const RequestId id = e.add_request(prompt, greedy(max_tokens), 1, {true, 5});
  Tokens out;
  while (e.has_unfinished())
    for (const StepEvent& ev : e.step())
      if (ev.request == id && ev.token) out.push_back(*ev.token);
  return out;
}

void expect_same(const Tokens& got, const Tokens& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].id, want[i].id) << what << ", token " << i;
    EXPECT_EQ(std::memcmp(&got[i].logprob, &want[i].logprob, sizeof(float)), 0)
        << what << ", token " << i << ": logprob differs in its bits";
    ASSERT_EQ(got[i].top_logprobs.size(), want[i].top_logprobs.size());
    for (size_t j = 0; j < got[i].top_logprobs.size(); ++j) {
      EXPECT_EQ(got[i].top_logprobs[j].token, want[i].top_logprobs[j].token);
      EXPECT_EQ(got[i].top_logprobs[j].logprob, want[i].top_logprobs[j].logprob);
    }
  }
}

class StaticDiskTier : public ::testing::TestWithParam<KvFormat> {
 protected:
  std::unique_ptr<Engine> make_static(const fs::path& dir) {
    EngineOptions o;
    o.kv_disk_dir = dir.string();
    o.block_size = 8;
    return std::make_unique<Engine>(
        *model_, pool_, compile_plans(*model_, small_static_config(1, GetParam()), 1), o);
  }
  std::unique_ptr<Model> model_ = make_engine_test_model();
  ThreadPool pool_{1};
};

TEST_P(StaticDiskTier, ARestoredSlotGivesTheColdRunsBits) {
  TempDir dir("kvforge-static-disk");
  const std::vector<int32_t> prompt = make_prompt(37, 5);
  const Tokens cold = run_one(*make_static(""), prompt, 6);

  auto writer = make_static(dir.path);
  expect_same(run_one(*writer, prompt, 6), cold, "writing through");
  EXPECT_EQ(writer->stats().disk.blocks_stored, 4) << "(37 - 1) / 8 full prompt blocks... "
                                                      "and the 37th token's block is not full";
  auto restarted = make_static(dir.path);
  expect_same(run_one(*restarted, prompt, 6), cold, "restored from disk");
  EXPECT_EQ(restarted->stats().disk.hits, 4);
  EXPECT_EQ(restarted->stats().disk.tokens_restored, 32);
  EXPECT_EQ(restarted->stats().prefix.tokens_reused, 0) << "no slot kept anything";
  EXPECT_EQ(restarted->stats().kv_blocks_used, 0) << "the slot is free again";

  // A longer prompt that shares the prefix: 4 blocks restored, the rest
  // prefilled from position 32 on, compared with a cold run of it.
  std::vector<int32_t> longer = prompt;
  for (int32_t t : make_prompt(3, 6)) longer.push_back(t);
  const Tokens cold_longer = run_one(*make_static(""), longer, 4);
  expect_same(run_one(*make_static(dir.path), longer, 4), cold_longer, "longer prompt");
}

// The paged engine writes the blocks, the static pipeline restores them.
TEST_P(StaticDiskTier, PagedFilesServeTheStaticPipeline) {
  TempDir dir("kvforge-static-disk");
  const std::vector<int32_t> prompt = make_prompt(37, 9);
  const Tokens cold = run_one(*make_static(""), prompt, 6);
  EngineOptions po;
  po.block_size = 8;
  po.kv_blocks = 16;
  po.kv_format = GetParam();
  po.kv_disk_dir = dir.path.string();
  Engine paged(*model_, pool_, po);
  const RequestId id = paged.add_request(prompt, greedy(1));
  while (paged.has_unfinished()) paged.step();
  (void)id;
  EXPECT_GE(paged.stats().disk.blocks_stored, 4);
  auto fresh = make_static(dir.path);
  expect_same(run_one(*fresh, prompt, 6), cold, "static from paged files");
  EXPECT_EQ(fresh->stats().disk.hits, 4);
}

INSTANTIATE_TEST_SUITE_P(Formats, StaticDiskTier,
                         ::testing::Values(KvFormat{KvDtype::F16, KvDtype::F16},
                                           KvFormat{KvDtype::Int8, KvDtype::Int8}),
                         [](const auto& p) { return std::string(kv_dtype_name(p.param.k)); });

}  // namespace
}  // namespace kvforge::testing
