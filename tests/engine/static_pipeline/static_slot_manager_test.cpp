// StaticSlotManager, the static slots as a KV manager: a request of n
// branches is admitted only with n free slots, admission takes the free slot
// keeping the most of the prompt (ties: the lowest), what a slot keeps is cut
// to at most prefill_chunk new tokens, actions whose question says "no"
// throw, and without reuse a freed slot keeps nothing.
#include "engine/static_pipeline/static_slot_manager.h"

#include <gtest/gtest.h>

#include "static_test_util.h"

namespace kvforge::testing {
namespace {

class StaticSlotManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = make_test_model(tiny_spec());
    // capacity 64, chunk 8, 3 slots
    runner_ = std::make_unique<StaticRunner>(*model_, pool_,
                                             compile_plans(*model_, small_static_config(3), 1));
  }
  // Fills the slot `seq` holds with `tokens` and records them.
  void fill(StaticSlotManager& m, SeqId seq, const std::vector<int32_t>& tokens) {
    runner_->prefill(m.slot_of(seq), tokens);
    m.mark_computed(seq, tokens, int32_t(tokens.size()));
  }

  std::unique_ptr<Model> model_;
  ThreadPool pool_{1};
  std::unique_ptr<StaticRunner> runner_;
};

TEST_F(StaticSlotManagerTest, ARequestWaitsForAllItsSlotsAndActionsPastTheQuestionThrow) {
  StaticSlotManager m(*runner_, false);
  const std::vector<int32_t> p = test_prompt(10);
  EXPECT_TRUE(m.can_admit(p, 10, 3));
  EXPECT_FALSE(m.can_admit(p, 10, 4));
  EXPECT_FALSE(m.can_admit(p, 65, 1)) << "past the capacity of 64";
  EXPECT_EQ(m.admit(0, p, 10), 0);
  EXPECT_EQ(m.admit(1, p, 10), 0);
  EXPECT_FALSE(m.can_admit(p, 10, 2));
  EXPECT_TRUE(m.can_admit(p, 10, 1));
  EXPECT_EQ(m.occupied(), 2);
  EXPECT_THROW(m.admit(1, p, 10), std::invalid_argument) << "sequence 1 holds a slot";
  EXPECT_TRUE(m.can_append(0, 54));
  EXPECT_FALSE(m.can_append(0, 55));
  EXPECT_THROW(m.append(0, 55), std::logic_error);
  m.append(0, 54);
  EXPECT_FALSE(m.can_append(0, 1));
  m.admit(2, p, 10);
  EXPECT_THROW(m.admit(3, p, 10), std::logic_error) << "no free slot";
  m.free(1);
  EXPECT_EQ(m.occupied(), 2);
  EXPECT_THROW(m.slot_of(1), std::logic_error);
}

TEST_F(StaticSlotManagerTest, AdmissionTakesTheFreeSlotKeepingTheMostOfThePrompt) {
  StaticSlotManager m(*runner_, true);
  const std::vector<int32_t> a = test_prompt(20, 1), b = test_prompt(20, 2);
  m.admit(0, a, 20);
  m.admit(1, b, 20);
  fill(m, 0, a);
  fill(m, 1, b);
  EXPECT_EQ(m.slot_of(0), 0);
  EXPECT_EQ(m.slot_of(1), 1);
  EXPECT_EQ(m.positions_filled(), 40);
  m.free(0);
  m.free(1);
  EXPECT_EQ(runner_->length(1), 20) << "reuse keeps the K/V";
  std::vector<int32_t> next = b;
  for (int32_t t : test_prompt(5, 3)) next.push_back(t);
  EXPECT_EQ(m.cached_prefix(next), 20);
  EXPECT_EQ(m.admit(2, next, int32_t(next.size())), 20);
  EXPECT_EQ(m.slot_of(2), 1) << "b's slot, not the lower free one";
  m.truncate(2, 20);
  EXPECT_EQ(runner_->length(1), 20);
  // More than a prefill chunk (8) of new tokens: the whole prompt is computed.
  std::vector<int32_t> longer = a;
  for (int32_t t : test_prompt(9, 4)) longer.push_back(t);
  EXPECT_EQ(m.cached_prefix(longer), 0);
  EXPECT_EQ(m.admit(3, longer, int32_t(longer.size())), 0);
  EXPECT_EQ(m.slot_of(3), 0) << "ties go to the lowest free slot";
}

TEST_F(StaticSlotManagerTest, WithoutReuseAFreedSlotKeepsNothing) {
  StaticSlotManager m(*runner_, false);
  const std::vector<int32_t> a = test_prompt(12, 1);
  m.admit(0, a, 12);
  fill(m, 0, a);
  m.free(0);
  EXPECT_EQ(runner_->length(0), 0);
  std::vector<int32_t> next = a;
  next.push_back(5);
  EXPECT_EQ(m.cached_prefix(next), 0);
  EXPECT_EQ(m.positions_filled(), 0);
}

}  // namespace
}  // namespace kvforge::testing
