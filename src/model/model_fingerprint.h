// The fingerprint that identifies a model (and, on several ranks, the share
// of it this rank holds): the KV disk tier's files and the static pipeline's
// plan files record it, and are refused for any other model. FNV-1a 64: not
// cryptographic (neither file is a security boundary; their readers
// bounds-check everything regardless), but any change to what it covers
// changes it with overwhelming probability.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "model/model.h"

namespace kvforge {

class Fnv1a64 {
 public:
  void bytes(const void* data, size_t n);
  void u64(uint64_t v) { bytes(&v, sizeof v); }
  void str(std::string_view s) {
    u64(s.size());
    bytes(s.data(), s.size());
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

// Covers every metadata key and value, the tensor table (names, shapes,
// types, offsets) and a sample of each tensor's bytes (its first, middle and
// last 256 bytes), so two random models of one shape but different seeds
// differ. Cost: independent of the weights' total size.
uint64_t model_fingerprint(const Model& model);

}  // namespace kvforge
