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

}  // namespace kvforge::testing
