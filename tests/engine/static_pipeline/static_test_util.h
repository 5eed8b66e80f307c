// Shared pieces of the static pipeline tests: small configurations over the
// tiny random models, and the dynamic engine (SequenceRunner) as the oracle.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "engine/sequence_runner.h"
#include "engine/static_pipeline/plan_compiler.h"
#include "engine/static_pipeline/static_runner.h"
#include "test_models.h"

namespace kvforge::testing {

// capacity 64 = 40 + 24, chunk 8, variants 16/32/48/64: every boundary a
// short test can cross.
inline StaticConfig small_static_config(int32_t slots = 1, KvFormat kv = {}) {
  StaticConfig c;
  c.max_prompt_len = 40;
  c.min_response_len = 24;
  c.prefill_chunk = 8;
  c.generate_variants = {16, 32, 48, 64};
  c.slots = slots;
  c.kv_format = kv;
  return c;
}

inline RandomModelSpec tiny_spec(const char* arch = "llama", uint64_t seed = 11) {
  RandomModelSpec s;
  s.name = std::string("static-") + arch;
  s.arch = arch;
  s.seed = seed;
  return s;
}

inline std::vector<int32_t> test_prompt(size_t n, int32_t salt = 0) {
  std::vector<int32_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = int32_t(3 + (i * 37 + size_t(salt) * 11) % 250);
  p[0] = 1;
  return p;
}

inline int32_t argmax(std::span<const float> v) {
  return int32_t(std::max_element(v.begin(), v.end()) - v.begin());
}

inline bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// A greedy run: the logits after the prompt and after each generated token.
struct GreedyTrace {
  std::vector<std::vector<float>> logits;  // [1 + steps][n_vocab]
  std::vector<int32_t> tokens;             // [steps + 1] argmax of each logits row
};

inline GreedyTrace dynamic_greedy(const Model& model, std::span<const int32_t> prompt, int steps,
                                  int n_threads = 1, KvFormat kv = {}, int32_t n_ctx = 64) {
  ThreadPool pool(n_threads);
  SequenceRunner runner(model, pool, {.n_ctx = n_ctx, .max_batch = 512, .kv_format = kv});
  GreedyTrace t;
  std::span<const float> logits = runner.prefill(prompt);
  for (int i = 0;; ++i) {
    t.logits.emplace_back(logits.begin(), logits.end());
    t.tokens.push_back(argmax(logits));
    if (i == steps) break;
    logits = runner.decode(t.tokens.back());
  }
  return t;
}

// Same tokens, and logits the same bits at every step.
inline void expect_same_traces(const GreedyTrace& got, const GreedyTrace& want) {
  ASSERT_EQ(got.tokens, want.tokens);
  for (size_t i = 0; i < want.logits.size(); ++i)
    ASSERT_TRUE(same_bits(got.logits[i], want.logits[i])) << "step " << i;
}

inline GreedyTrace static_greedy(StaticRunner& runner, int32_t slot,
                                 std::span<const int32_t> prompt, int steps) {
  GreedyTrace t;
  std::span<const float> logits = runner.prefill(slot, prompt);
  for (int i = 0;; ++i) {
    t.logits.emplace_back(logits.begin(), logits.end());
    t.tokens.push_back(argmax(logits));
    if (i == steps) break;
    logits = runner.decode_one(slot, t.tokens.back());
  }
  return t;
}

}  // namespace kvforge::testing
