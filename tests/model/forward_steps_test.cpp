// The forward pass's shared steps (model/forward_steps.h) and the
// communicator it is given: what both the paged pass and the static plan
// executor compute with.
#include "model/forward_steps.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/ops/activation.h"
#include "model/forward.h"
#include "tiny_model.h"

namespace kvforge {
namespace {

using testing::tiny_model;

// Claims to be one rank of two; never exchanges anything.
class TwoRankClaim final : public Communicator {
 public:
  explicit TwoRankClaim(int rank) : rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return 2; }
  void all_gather(float*, size_t) override {}
  void all_gather_v(float*, std::span<const int64_t>) override {}
  void all_gather(uint64_t*) override {}
  void broadcast(void*, size_t, int) override {}
  [[noreturn]] void abort(int) override { std::abort(); }

 private:
  int rank_;
};

TEST(ForwardSteps, ForwardRefusesACommunicatorTheModelWasNotLoadedFor) {
  const auto model = tiny_model("llama");
  TwoRankClaim two(1);
  try {
    check_communicator(*model, two, "forward");
    FAIL() << "accepted a communicator of 2 ranks for a model of one process";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("loaded as rank 0 of 1, the communicator is rank 1 of 2"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(check_communicator(*model, one_process_communicator(), "forward"));
  EXPECT_EQ(one_process_communicator().size(), 1);
}

TEST(ForwardSteps, SoftCapOnlyWhereTheModelCapsItsLogits) {
  const auto llama = tiny_model("llama");
  const auto gemma = tiny_model("gemma2", 2, 30.0f);
  std::vector<float> v = {-1000.0f, -3.0f, 0.0f, 0.5f, 7.0f, 1000.0f};
  const std::vector<float> before = v;
  soft_cap_logits(llama->rank_config(), v.data(), int64_t(v.size()));
  EXPECT_EQ(v, before);
  const float cap = gemma->rank_config().final_softcap;
  ASSERT_GT(cap, 0.0f);
  soft_cap_logits(gemma->rank_config(), v.data(), int64_t(v.size()));
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(v[i], cap * std::tanh(before[i] * (1.0f / cap))) << i;
    EXPECT_LE(std::fabs(v[i]), cap);
  }
}

TEST(ForwardSteps, GatedActivationIsTheModelsGate) {
  const float up[] = {0.5f, -2.0f, 3.0f, 1.0f, -0.25f, 4.0f, 0.0f, 2.0f, -1.0f};
  const float gate[] = {1.0f, 2.0f, -3.0f, 0.1f, -0.5f, 6.0f, 1.5f, -4.0f, 0.0f};
  constexpr int64_t n = 9;
  for (const char* arch : {"llama", "gemma2"}) {
    const auto model = tiny_model(arch);
    float got[n], want[n];
    std::copy_n(gate, n, got);
    gated_activation(model->rank_config(), got, up, n);
    if (model->rank_config().ffn_act == FfnActivation::GeluTanh)
      geglu(gate, up, n, want);
    else
      swiglu(gate, up, n, want);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(got[i], want[i]) << arch << " " << i;
  }
}

TEST(ForwardSteps, AttendedKeysOfAWindow) {
  EXPECT_EQ(attended_keys(0, 9).begin, 0);
  EXPECT_EQ(attended_keys(0, 9).end, 10);
  EXPECT_EQ(attended_keys(4, 9).begin, 6);
  EXPECT_EQ(attended_keys(4, 9).end, 10);
  EXPECT_EQ(attended_keys(16, 3).begin, 0);
}

}  // namespace
}  // namespace kvforge
