// Helpers for the batching-engine tests: a tiny random model, prompts, the
// single-sequence oracle (SequenceRunner, greedy) and a driver that runs an
// Engine to completion recording each branch's tokens and logits.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "engine/sequence_runner.h"
#include "kvforge/engine.h"
#include "test_models.h"

namespace kvforge::testing {

inline std::unique_ptr<Model> make_engine_test_model(GgmlType weights = GgmlType::F32) {
  RandomModelSpec spec;
  spec.name = "engine-tiny";
  spec.n_ctx = 256;
  spec.weight_type = weights;
  spec.seed = 11;
  return make_test_model(spec);
}

// A random qwen35 (hybrid) model: 8 layers, layers 3 and 7 full attention.
inline std::unique_ptr<Model> make_hybrid_engine_test_model() {
  RandomModelSpec spec;
  spec.arch = "qwen35";
  spec.n_layer = 8;
  spec.head_dim = 32;
  spec.n_ctx = 256;
  return make_test_model(spec);
}

// Engine options for prefix reuse on that model: blocks of 16, two state
// snapshots, prefill chunks of `chunk` tokens.
inline EngineOptions hybrid_prefix_options(int32_t chunk) {
  EngineOptions o;
  o.block_size = 16;
  o.kv_blocks = 64;
  o.max_seqs = 4;
  o.max_batched_tokens = chunk;
  o.state_snapshots = 2;
  return o;
}

// Deterministic pseudo-random prompt of `len` ids in [3, 259), seeded by `seed`.
inline std::vector<int32_t> make_prompt(int len, uint32_t seed) {
  std::vector<int32_t> p(static_cast<size_t>(len));
  uint32_t x = seed * 2654435761u + 12345u;
  for (auto& t : p) {
    x = x * 1103515245u + 12345u;
    t = 3 + int32_t((x >> 8) % 256u);
  }
  return p;
}

inline SamplingParams greedy(int max_tokens) {
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  return p;
}

struct Trace {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> logits;  // [generated][n_vocab]: what each token was sampled from
  std::optional<FinishReason> finish;
};

// The oracle: the same prompt alone through SequenceRunner, greedy.
inline Trace run_alone(const Model& model, std::span<const int32_t> prompt, int max_tokens) {
  ThreadPool pool(1);
  SequenceRunner runner(model, pool, {.n_ctx = model.config().n_ctx_train, .max_batch = 512});
  Trace t;
  std::span<const float> logits = runner.prefill(prompt);
  for (int i = 0; i < max_tokens; ++i) {
    t.logits.emplace_back(logits.begin(), logits.end());
    const int32_t tok = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    t.tokens.push_back(tok);
    if (i + 1 < max_tokens) logits = runner.decode(tok);
  }
  return t;
}

using BranchKey = std::pair<RequestId, int>;

// Records tokens, finishes and (through EngineOptions::on_logits) logits.
class EngineRecorder {
 public:
  EngineOptions hook(EngineOptions o) {
    o.on_logits = [this](RequestId r, int b, std::span<const float> l) {
      traces[{r, b}].logits.emplace_back(l.begin(), l.end());
    };
    return o;
  }
  void record(const std::vector<StepEvent>& events) {
    for (const StepEvent& ev : events) {
      Trace& t = traces[{ev.request, ev.branch}];
      EXPECT_FALSE(t.finish.has_value()) << "event after finish";
      if (ev.token) t.tokens.push_back(ev.token->id);
      if (ev.finish) t.finish = ev.finish;
    }
  }
  Trace& at(RequestId r, int branch) { return traces[{r, branch}]; }
  std::map<BranchKey, Trace> traces;
};

}  // namespace kvforge::testing
