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

}  // namespace kvforge::testing
