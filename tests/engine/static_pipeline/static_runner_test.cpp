// StaticRunner behaviour at its edges: prompt overflow (error or explicit
// truncate-left), the capacity limit, variant choice, and batch slots whose
// empty rows are padding that changes nothing.
#include <gtest/gtest.h>

#include <functional>

#include "static_test_util.h"

namespace kvforge {
namespace {

using testing::same_bits;
using testing::small_static_config;
using testing::test_prompt;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(StaticRunner, PromptOverflowIsAClearErrorUnlessTruncateLeft) {
  const StaticConfig config = small_static_config();  // max_prompt_len 40
  const std::vector<int32_t> prompt = test_prompt(45);
  const std::string msg = error_of([&] { fit_prompt(prompt, config, OverflowPolicy::Error); });
  EXPECT_NE(msg.find("prompt of 45 tokens"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--max-prompt-len 40"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--overflow truncate-left"), std::string::npos) << msg;
  const auto kept = fit_prompt(prompt, config, OverflowPolicy::TruncateLeft);
  ASSERT_EQ(kept.size(), 40u);
  EXPECT_EQ(kept.data(), prompt.data() + 5);  // the last 40 tokens
  EXPECT_EQ(fit_prompt(test_prompt(40), config, OverflowPolicy::Error).size(), 40u);

  const auto model = testing::make_test_model(testing::tiny_spec());
  ThreadPool pool(1);
  StaticRunner runner(*model, pool, compile_plans(*model, config, 1));
  EXPECT_THROW(runner.prefill(0, prompt), std::length_error);
  EXPECT_EQ(runner.length(0), 0);
  // The truncated prompt runs exactly like those 40 tokens given directly.
  const std::vector<int32_t> tail(prompt.end() - 40, prompt.end());
  const auto a = runner.prefill(0, kept);
  const std::vector<float> got(a.begin(), a.end());
  const testing::GreedyTrace want = testing::dynamic_greedy(*model, tail, 0);
  EXPECT_TRUE(same_bits(got, want.logits[0]));
  EXPECT_EQ(parse_overflow_policy("truncate-left"), OverflowPolicy::TruncateLeft);
  EXPECT_THROW(parse_overflow_policy("truncate"), std::invalid_argument);
}

TEST(StaticRunner, GenerationStopsAtCapacityWithAClearError) {
  const auto model = testing::make_test_model(testing::tiny_spec());
  const StaticConfig config = small_static_config();
  ThreadPool pool(1);
  StaticRunner runner(*model, pool, compile_plans(*model, config, 1));
  testing::static_greedy(runner, 0, test_prompt(40), config.capacity() - 40);
  ASSERT_EQ(runner.length(0), config.capacity());
  const std::string msg = error_of([&] { runner.decode_one(0, 5); });
  EXPECT_NE(msg.find("static KV cache full"), std::string::npos) << msg;
  EXPECT_NE(msg.find("64"), std::string::npos) << msg;
  EXPECT_EQ(runner.length(0), config.capacity());
}

TEST(StaticRunner, PicksTheSmallestVariantThatHoldsTheNextToken) {
  const auto model = testing::make_test_model(testing::tiny_spec());
  ThreadPool pool(1);
  StaticRunner runner(*model, pool, compile_plans(*model, small_static_config(), 1));
  EXPECT_EQ(runner.variant_for(1), 0u);
  EXPECT_EQ(runner.variant_for(16), 0u);
  EXPECT_EQ(runner.variant_for(17), 1u);
  EXPECT_EQ(runner.variant_for(64), 3u);
  EXPECT_THROW(runner.variant_for(65), std::length_error);
  runner.prefill(0, test_prompt(15));
  runner.decode_one(0, 3);  // writes position 15: KV 16 suffices
  EXPECT_EQ(runner.last_variant(), 16);
  runner.decode_one(0, 3);  // position 16 needs 17 positions
  EXPECT_EQ(runner.last_variant(), 32);
  // A variant too short for the slot is refused, not silently clipped.
  const int32_t step[1] = {3};
  EXPECT_THROW(runner.decode_with_variant(step, 0), std::out_of_range);
  EXPECT_NO_THROW(runner.decode_with_variant(step, 3));
  EXPECT_EQ(runner.last_variant(), 64);
}

TEST(StaticRunner, BatchSlotsWithAnEmptySlotEqualSingleSlotRuns) {
  const auto model = testing::make_test_model(testing::tiny_spec("llama", 17));
  const StaticConfig single = small_static_config(1);
  const StaticConfig batch = small_static_config(3);
  ThreadPool pool(2);
  StaticRunner one(*model, pool, compile_plans(*model, single, 2));
  StaticRunner three(*model, pool, compile_plans(*model, batch, 2));
  // Slots 0 and 2 run different prompts (lengths 3 and 20: they reach the
  // variant boundaries at different steps); slot 1 stays empty throughout.
  const std::vector<int32_t> p0 = test_prompt(3, 1), p2 = test_prompt(20, 2);
  const int steps = 40;
  const testing::GreedyTrace want0 = testing::static_greedy(one, 0, p0, steps);
  one.release(0);
  const testing::GreedyTrace want2 = testing::static_greedy(one, 0, p2, steps);
  ASSERT_TRUE(same_bits(three.prefill(0, p0), want0.logits[0]));
  ASSERT_TRUE(same_bits(three.prefill(2, p2), want2.logits[0]));
  const size_t n_vocab = size_t(model->config().n_vocab);
  int32_t step[3] = {want0.tokens[0], kIdleSlot, want2.tokens[0]};
  for (int i = 1; i <= steps; ++i) {
    const std::span<const float> logits = three.decode(step);
    ASSERT_TRUE(same_bits(logits.subspan(0, n_vocab), want0.logits[size_t(i)])) << "step " << i;
    ASSERT_TRUE(same_bits(logits.subspan(2 * n_vocab, n_vocab), want2.logits[size_t(i)]))
        << "step " << i;
    step[0] = testing::argmax(logits.subspan(0, n_vocab));
    step[2] = testing::argmax(logits.subspan(2 * n_vocab, n_vocab));
  }
  EXPECT_EQ(three.length(1), 0);  // the padding row wrote nothing
  EXPECT_EQ(three.cache().length(1), 0);
  EXPECT_EQ(three.last_variant(), 64);  // slot 2 at 60 positions drives the variant
}

TEST(StaticRunner, BadCallsAreErrors) {
  const auto model = testing::make_test_model(testing::tiny_spec());
  ThreadPool pool(1);
  StaticRunner runner(*model, pool, compile_plans(*model, small_static_config(2), 1));
  EXPECT_THROW(runner.prefill(2, test_prompt(3)), std::out_of_range);
  EXPECT_THROW(runner.prefill(0, {}), std::invalid_argument);
  EXPECT_THROW(runner.decode_one(0, 3), std::logic_error);  // no prompt yet
  const std::vector<int32_t> bad = {1, 99999};
  EXPECT_THROW(runner.prefill(0, bad), std::invalid_argument);
  EXPECT_EQ(runner.length(0), 0);  // the failed prefill left nothing behind
  runner.prefill(0, test_prompt(3));
  EXPECT_THROW(runner.prefill(0, test_prompt(3)), std::logic_error);  // slot busy
  const int32_t idle[2] = {kIdleSlot, kIdleSlot};
  EXPECT_THROW(runner.decode(idle), std::invalid_argument);
  ThreadPool other(3);
  EXPECT_THROW(StaticRunner(*model, other, compile_plans(*model, small_static_config(), 1)),
               std::invalid_argument);
}

}  // namespace
}  // namespace kvforge
