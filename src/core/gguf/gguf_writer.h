// Writer of GGUF files (version 3 by default, 2 on request). Used by tools
// (make-model, quantize) and tests. Keys and tensors are written in the order
// they were added; tensor data is padded to the alignment.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/gguf/gguf_value.h"

namespace kvforge::gguf {

class GgufWriter {
 public:
  explicit GgufWriter(uint32_t version = 3, uint64_t alignment = 32);

  // Adds or replaces a key. Setting "general.alignment" (UINT32) changes the alignment.
  void set(std::string key, Value value);
  // Adds a tensor; `data` is copied and must be exactly the tensor's byte size.
  // dims[0] is the contiguous dimension. Throws std::invalid_argument on mismatch.
  void add_tensor(std::string name, GgmlType type, std::vector<uint64_t> dims,
                  std::span<const uint8_t> data);

  std::vector<uint8_t> to_bytes() const;
  void write(const std::filesystem::path& path) const;  // throws std::runtime_error on I/O error

 private:
  struct PendingTensor {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> dims;
    std::vector<uint8_t> data;
  };
  uint32_t version_;
  uint64_t alignment_;
  std::vector<KeyValue> kvs_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace kvforge::gguf
