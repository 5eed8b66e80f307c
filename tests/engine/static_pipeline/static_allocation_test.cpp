// Static means static: after compile and one warm-up step, decode steps (and
// prefill chunks) perform zero heap allocations and compile no plan, even
// while the sequence climbs through every generate variant.
#include <gtest/gtest.h>

#include "static_allocation_counter.h"
#include "static_test_util.h"

namespace kvforge {
namespace {

using testing::heap_allocations;

TEST(StaticAllocation, CounterSeesAllocations) {
  KVFORGE_REQUIRE_ALLOCATION_COUNTER();
  const uint64_t before = heap_allocations();
  void* p = ::operator new(64);  // an explicit call: never elided
  ::operator delete(p);
  std::vector<int> v(100);
  v[99] = 1;
  EXPECT_EQ(v[99] + int(heap_allocations() - before), 3);
}

void expect_steps_allocate_nothing(const RandomModelSpec& spec) {
  const auto model = testing::make_test_model(spec);
  const StaticConfig config = testing::small_static_config(2, {KvDtype::F16, KvDtype::F32});
  ThreadPool pool(2);
  StaticRunner runner(*model, pool, compile_plans(*model, config, 2));
  const std::vector<int32_t> prompt = testing::test_prompt(5);
  const std::vector<int32_t> prompt2 = testing::test_prompt(12, 3);
  int32_t token = testing::argmax(runner.prefill(0, prompt));
  token = testing::argmax(runner.decode_one(0, token));  // warm-up

  const uint64_t allocs = heap_allocations();
  const uint64_t compiled = plans_compiled();
  int32_t variants_seen = 0, last_variant = 0;
  while (runner.length(0) < config.capacity()) {
    token = testing::argmax(runner.decode_one(0, token));
    if (runner.last_variant() != last_variant) ++variants_seen;
    last_variant = runner.last_variant();
  }
  // A second sequence in the other slot: prefill (two chunks) and batch decode.
  int32_t t2 = testing::argmax(runner.prefill(1, prompt2));
  const int32_t step[2] = {kIdleSlot, t2};
  for (int i = 0; i < 10; ++i) runner.decode(step);

  EXPECT_EQ(heap_allocations() - allocs, 0u);
  EXPECT_EQ(plans_compiled() - compiled, 0u);
  EXPECT_EQ(variants_seen, 4);  // 16 → 32 → 48 → 64 without compiling
}

TEST(StaticAllocation, DecodeStepsAllocateNothingAndNeverReplan) {
  KVFORGE_REQUIRE_ALLOCATION_COUNTER();
  expect_steps_allocate_nothing(testing::tiny_spec("qwen2", 8));
}

// Sliding-window layers on rings, soft-capping, Q/K and post norms, two RoPE tables.
TEST(StaticAllocation, WindowedGemmaStepsAllocateNothing) {
  KVFORGE_REQUIRE_ALLOCATION_COUNTER();
  RandomModelSpec spec = testing::tiny_spec("gemma3", 8);
  spec.sliding_window = 5;
  spec.swa_pattern = 2;
  spec.rope_freq_base_swa = 1e4f;
  spec.final_softcap = 30.0f;
  expect_steps_allocate_nothing(spec);
}

// The mixture-of-experts FFN: its routing scratch is reserved with the executors.
TEST(StaticAllocation, MixtureOfExpertsStepsAllocateNothing) {
  KVFORGE_REQUIRE_ALLOCATION_COUNTER();
  RandomModelSpec spec = testing::tiny_spec("qwen3moe", 8);
  spec.n_expert = 8;
  spec.n_expert_used = 2;
  spec.n_ff_exp = 32;
  expect_steps_allocate_nothing(spec);
}

// gpt-oss: sinks in windowed and full layers, experts with biases.
TEST(StaticAllocation, GptOssStepsAllocateNothing) {
  KVFORGE_REQUIRE_ALLOCATION_COUNTER();
  RandomModelSpec spec = testing::tiny_spec("gpt-oss", 8);
  spec.sliding_window = 6;
  expect_steps_allocate_nothing(spec);
}

// Hybrid: the Gated DeltaNet op's gathered rows and scratch are the executor's,
// the states the cache's; the full layers' output gate an arena buffer.
TEST(StaticAllocation, HybridStepsAllocateNothing) {
  KVFORGE_REQUIRE_ALLOCATION_COUNTER();
  for (const char* arch : {"qwen35", "qwen35moe"}) {
    RandomModelSpec spec = testing::tiny_spec(arch, 8);
    spec.n_layer = 4;
    expect_steps_allocate_nothing(spec);
  }
}

// gemma4: per-layer embeddings, windowed heads of their own size, shared-KV
// layers reading their sources' staged records, their FFNs double wide; and
// its MoE variant, whose experts' rows and inputs are the executor's reserved
// scratch.
TEST(StaticAllocation, Gemma4StepsAllocateNothing) {
  KVFORGE_REQUIRE_ALLOCATION_COUNTER();
  for (const bool moe : {false, true}) {
    RandomModelSpec spec = testing::gemma4_test_spec(3, 5);
    spec.head_dim_swa = 16;
    spec.double_wide_ffn = true;
    spec.gemma4_moe = moe;
    expect_steps_allocate_nothing(spec);
  }
}

TEST(StaticAllocation, CompilingCountsPlans) {
  const auto model = testing::make_test_model(testing::tiny_spec());
  const uint64_t before = plans_compiled();
  compile_plans(*model, testing::small_static_config(), 1);
  EXPECT_EQ(plans_compiled() - before, 5u);  // 1 prefill + 4 variants
}

}  // namespace
}  // namespace kvforge
