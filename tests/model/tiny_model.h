// Random-weight models of the model layer's tests, built in memory.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/gguf/gguf_file.h"
#include "model/model.h"
#include "model/random_model.h"

namespace kvforge::testing {

// A tiny model of `arch` (model/random_model.h); final_softcap 0: none.
inline std::unique_ptr<Model> tiny_model(const char* arch, int n_layer = 2,
                                         float final_softcap = 0.0f) {
  RandomModelSpec spec;
  spec.name = std::string("tiny-") + arch;
  spec.arch = arch;
  spec.n_layer = n_layer;
  spec.final_softcap = final_softcap;
  const std::vector<uint8_t> bytes = make_random_model(spec).to_bytes();
  return Model::from_file(gguf::GgufFile::from_bytes(bytes, spec.name));
}

}  // namespace kvforge::testing
