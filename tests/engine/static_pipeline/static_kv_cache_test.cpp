// StaticKvCache as a KvStore: the dynamic forward pass runs on it like on
// the ContiguousKvCache whose layout it shares (same logits, bit for bit),
// each write marks its position in the slot's mask, and a read of a position
// nobody wrote is an error rather than stale data.
#include "engine/static_pipeline/static_kv_cache.h"

#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>
#include <vector>

#include "engine/kv/contiguous_kv_cache.h"
#include "model/forward.h"
#include "static_test_util.h"

namespace kvforge {
namespace {

// One sequence's tokens through forward() at positions [start, start + n), in `slot`.
std::vector<float> run_step(const Model& model, KvStore& kv, int32_t slot,
                            std::span<const int32_t> tokens, int32_t start) {
  ThreadPool pool(1);
  ForwardScratch scratch(model.config());
  scratch.reserve(int(tokens.size()), pool.size());
  std::vector<int32_t> positions(tokens.size()), seq_ids(tokens.size(), slot);
  std::iota(positions.begin(), positions.end(), start);
  const int32_t last = int32_t(tokens.size()) - 1;
  std::vector<float> logits(size_t(model.config().n_vocab));
  forward(model, {tokens, positions, seq_ids, {&last, 1}}, kv, scratch, pool, logits.data());
  return logits;
}

TEST(StaticKvCacheTest, ForwardOverTheKvStoreInterfaceEqualsTheContiguousCache) {
  const auto model = testing::make_test_model(testing::tiny_spec());
  const KvFormat kv{KvDtype::F16, KvDtype::F32};
  StaticKvCache slots(model->config(), 32, 2, kv);
  ContiguousKvCache contiguous(model->config(), 32, kv, 2);
  const std::vector<int32_t> prompt = testing::test_prompt(9);
  std::vector<float> got = run_step(*model, slots, 1, prompt, 0);
  std::vector<float> want = run_step(*model, contiguous, 1, prompt, 0);
  EXPECT_TRUE(testing::same_bits(got, want));
  EXPECT_EQ(slots.length(1), 9);
  EXPECT_EQ(slots.length(0), 0) << "the other slot is untouched";
  for (int32_t pos = 9; pos < 14; ++pos) {
    const int32_t token = testing::argmax(want);
    got = run_step(*model, slots, 1, {&token, 1}, pos);
    want = run_step(*model, contiguous, 1, {&token, 1}, pos);
    ASSERT_TRUE(testing::same_bits(got, want)) << "position " << pos;
  }
  EXPECT_EQ(slots.length(1), 14);
}

TEST(StaticKvCacheTest, ReadingAPositionNobodyWroteIsAnError) {
  const auto model = testing::make_test_model(testing::tiny_spec());
  StaticKvCache cache(model->config(), 16, 1, {});
  run_step(*model, cache, 0, testing::test_prompt(4), 0);
  std::vector<KvSpan> out;
  cache.spans(0, 0, 0, 4, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].n, 4);
  EXPECT_THROW(cache.spans(0, 0, 0, 5, out), std::logic_error);
  cache.truncate(0, 2);
  EXPECT_THROW(cache.spans(0, 0, 0, 3, out), std::logic_error);
  EXPECT_THROW(cache.spans(0, 1, 0, 1, out), std::out_of_range) << "no slot 1";
  // A plan's span covers the whole KV length, filled or not.
  EXPECT_EQ(cache.span(0, 0, 16).n, 16);
}

}  // namespace
}  // namespace kvforge
