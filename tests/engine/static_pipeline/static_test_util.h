// Shared pieces of the static pipeline tests: small configurations over the
// tiny random models, and the dynamic engine (SequenceRunner) as the oracle.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "engine/sequence_runner.h"
#include "engine/static_pipeline/plan_compiler.h"
#include "engine/static_pipeline/static_runner.h"
#include "test_models.h"

namespace kvforge::testing {

// A configuration of the static pipeline in one call.
inline StaticConfig static_config(int32_t max_prompt_len, int32_t min_response_len,
                                  int32_t prefill_chunk, std::vector<int32_t> variants,
                                  int32_t slots, KvFormat kv) {
  StaticConfig c;
  c.max_prompt_len = max_prompt_len;
  c.min_response_len = min_response_len;
  c.prefill_chunk = prefill_chunk;
  c.generate_variants = std::move(variants);
  c.slots = slots;
  c.kv_format = kv;
  return c;
}

// capacity 64 = 40 + 24, chunk 8, variants 16/32/48/64: every boundary a
// short test can cross.
inline StaticConfig small_static_config(int32_t slots = 1, KvFormat kv = {}) {
  return static_config(40, 24, 8, {16, 32, 48, 64}, slots, kv);
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

// Prompts a and b prefilled into slots 0 and 1, then `steps` generate steps
// of both slots at once: each slot's logits are the same bits as the
// dynamic run of its prompt alone (in config.kv_format, on n_threads).
inline void expect_two_slots_equal_dynamic(const Model& model, const StaticConfig& config,
                                           int n_threads, std::span<const int32_t> a,
                                           std::span<const int32_t> b, int steps) {
  ThreadPool pool(n_threads);
  StaticRunner runner(model, pool, compile_plans(model, config, n_threads));
  const KvFormat kv = config.kv_format;
  const GreedyTrace want_a = dynamic_greedy(model, a, steps, n_threads, kv, config.capacity());
  const GreedyTrace want_b = dynamic_greedy(model, b, steps, n_threads, kv, config.capacity());
  std::vector<int32_t> tokens_a{argmax(runner.prefill(0, a))};
  std::vector<int32_t> tokens_b{argmax(runner.prefill(1, b))};
  const size_t n_vocab = size_t(model.config().n_vocab);
  for (int i = 0; i < steps; ++i) {
    const std::vector<int32_t> step = {tokens_a.back(), tokens_b.back()};
    const std::span<const float> logits = runner.decode(step);
    ASSERT_TRUE(same_bits(logits.first(n_vocab), want_a.logits[size_t(i) + 1])) << i;
    ASSERT_TRUE(same_bits(logits.subspan(n_vocab, n_vocab), want_b.logits[size_t(i) + 1])) << i;
    tokens_a.push_back(argmax(logits.first(n_vocab)));
    tokens_b.push_back(argmax(logits.subspan(n_vocab, n_vocab)));
  }
  EXPECT_EQ(tokens_a, want_a.tokens);
  EXPECT_EQ(tokens_b, want_b.tokens);
}

// A llama.cpp golden file's model run statically as the golden tests run it:
// a prompt of 17 in chunks of 8, then 30 steps through variants 16/32/48;
// the same bits as the dynamic run.
inline void expect_golden_file_runs_statically(const Model& model) {
  StaticConfig config;
  config.max_prompt_len = 24;
  config.min_response_len = 24;
  config.prefill_chunk = 8;
  config.generate_variants = {16, 32, 48};
  ThreadPool pool(2);
  StaticRunner runner(model, pool, compile_plans(model, config, 2));
  const std::vector<int32_t> prompt = test_prompt(17, 3);
  const GreedyTrace want = dynamic_greedy(model, prompt, 30, 2, {}, config.capacity());
  expect_same_traces(static_greedy(runner, 0, prompt, 30), want);
}

}  // namespace kvforge::testing
