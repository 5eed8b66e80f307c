// Writer of GGUF files (version 3 by default, 2 on request). Used by tools
// (make-model, quantize) and tests. Keys and tensors are written in the order
// they were added; tensor data is padded to the alignment.
//
// Layout written (GGUF spec): header, key-values, tensor infos, zero padding to
// the alignment, then each tensor's bytes followed by zero padding to the
// alignment (the last one included), at offsets assigned in order. A file with
// no tensors ends right after its metadata, as gguf-py writes vocabulary files.
// Reading a file written this way and writing it back with from_file() gives
// identical bytes (FLOAT32 values go through double, which is exact except
// that signalling NaNs come back quiet).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/gguf/gguf_value.h"

namespace kvforge::gguf {

class GgufFile;

class GgufWriter {
 public:
  // A non-default alignment is recorded as the first key, "general.alignment" (UINT32).
  // Throws std::invalid_argument for a version other than 2/3 or an alignment
  // that is not a power of two up to 2^31.
  explicit GgufWriter(uint32_t version = 3, uint64_t alignment = 32);
  // A writer holding a copy of `file`'s version, metadata (in order) and tensors.
  static GgufWriter from_file(const GgufFile& file);

  // Adds or replaces a key (a replaced key keeps its position). Setting
  // "general.alignment" (UINT32) changes the alignment. Throws std::invalid_argument
  // when the value cannot be encoded (variant not matching its type, integer out
  // of range for its width, mixed array items, nesting deeper than kMaxArrayDepth).
  void set(std::string key, Value value);
  // Adds a tensor; `data` is copied and must be exactly the tensor's byte size.
  // dims[0] is the contiguous dimension. Throws std::invalid_argument on mismatch,
  // duplicate name, unknown type, 0 or more than 4 dims, a zero dimension, or
  // dims[0] not a multiple of the type's block size (the rules the reader enforces).
  void add_tensor(std::string name, GgmlType type, std::vector<uint64_t> dims,
                  std::span<const uint8_t> data);

  std::vector<uint8_t> to_bytes() const;
  void write(const std::filesystem::path& path) const;  // throws std::runtime_error on I/O error

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  const std::vector<KeyValue>& metadata() const { return kvs_; }  // in write order

 private:
  // Header, key-values, tensor infos and the padding before the data section.
  std::vector<uint8_t> metadata_bytes() const;

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
