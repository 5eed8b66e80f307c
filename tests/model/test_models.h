// Random-weight models built in memory for tests.
#pragma once

#include <memory>

#include "core/gguf/gguf_file.h"
#include "model/model.h"
#include "model/random_model.h"

namespace kvforge::testing {

inline std::unique_ptr<Model> make_test_model(const RandomModelSpec& spec,
                                              const gguf::GgufFile* vocab = nullptr) {
  const std::vector<uint8_t> bytes = make_random_model(spec, vocab).to_bytes();
  return Model::from_file(gguf::GgufFile::from_bytes(bytes, "random-" + spec.name));
}

// A tiny qwen3moe: n_expert experts of n_ff_exp rows, n_used per token.
inline std::unique_ptr<Model> make_moe_test_model(int n_expert, int n_used, int n_ff_exp,
                                                  uint64_t seed = 42) {
  RandomModelSpec spec;
  spec.arch = "qwen3moe";
  spec.n_expert = n_expert;
  spec.n_expert_used = n_used;
  spec.n_ff_exp = n_ff_exp;
  spec.seed = seed;
  return make_test_model(spec);
}

// A tiny gemma4: 9 layers, windows of `window` on 0, 1, 3, 4, 6, 7 (pattern
// 3), heads of 32, per-layer embeddings of 16; the last `shared` layers read
// an earlier layer's K/V (3: layers 6, 7 read layer 4's, 8 reads layer 5's).
inline RandomModelSpec gemma4_test_spec(int shared, int window) {
  return {.name = "gemma4-shared",
          .arch = "gemma4",
          .n_layer = 9,
          .head_dim = 32,
          .sliding_window = window,
          .swa_pattern = 3,
          .rope_scaling = "",
          .n_kv_shared = shared,
          .control_tokens = {},
          .expert_type = {}};
}

}  // namespace kvforge::testing
