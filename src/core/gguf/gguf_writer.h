// Writer of GGUF files (version 3 by default, 2 on request). Used by tools
// (make-model, quantize) and tests. Keys and tensors are written in the order
// they were added; tensor data is padded to the alignment.
//
// Layout written (GGUF spec): header, key-values, tensor infos, zero padding to
// the alignment, then each tensor's bytes followed by zero padding to the
// alignment (the last one included), at offsets assigned in order. Tensors
// added with a producer instead of bytes (add_deferred_tensor) are generated
// while the file is written, in file order, so that a file larger than memory
// can be written one piece at a time. A file with
// no tensors ends right after its metadata, as gguf-py writes vocabulary files.
// Reading a file written this way and writing it back with from_file() gives
// identical bytes (FLOAT32 values go through double, which is exact except
// that signalling NaNs come back quiet).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/gguf/gguf_value.h"

namespace kvforge::gguf {

class GgufFile;

// Receives a deferred tensor's bytes, in order, one piece per call.
using TensorBytesSink = std::function<void(std::span<const uint8_t>)>;
// Writes a deferred tensor's bytes (exactly its byte size) through `out`.
using TensorProducer = std::function<void(const TensorBytesSink& out)>;
// Told the bytes of tensor data written so far, their total, and the tensor being written.
using WriteProgress = std::function<void(uint64_t done, uint64_t total, const std::string& tensor)>;

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

  // As add_tensor, the bytes coming from `produce` when the file is written
  // (each write() and to_bytes() calls every producer once, in file order, after
  // the pass-start hook). Throws std::runtime_error from the write when a
  // producer gives another byte count than the tensor's size.
  void add_deferred_tensor(std::string name, GgmlType type, std::vector<uint64_t> dims,
                           TensorProducer produce);
  // Called at the start of each write() and to_bytes(), before any producer
  // (producers that share state, such as one random stream, restart it here).
  void set_pass_start(std::function<void()> hook) { pass_start_ = std::move(hook); }

  std::vector<uint8_t> to_bytes() const;
  // Throws std::runtime_error on I/O error. `progress` is told after each
  // piece of tensor data (and once at the end).
  void write(const std::filesystem::path& path, const WriteProgress& progress = {}) const;

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  const std::vector<KeyValue>& metadata() const { return kvs_; }  // in write order

 private:
  // Header, key-values, tensor infos and the padding before the data section.
  std::vector<uint8_t> metadata_bytes() const;
  // The checks of add_tensor; returns the tensor's byte size.
  uint64_t check_tensor(const std::string& name, GgmlType type,
                        const std::vector<uint64_t>& dims) const;
  // Passes every tensor's bytes (then its padding) to `out`, in file order.
  void emit_tensors(const TensorBytesSink& out, const WriteProgress& progress) const;

  struct PendingTensor {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> dims;
    uint64_t n_bytes;
    std::vector<uint8_t> data;  // empty when deferred
    TensorProducer produce;     // empty unless deferred
  };
  uint32_t version_;
  uint64_t alignment_;
  std::vector<KeyValue> kvs_;
  std::vector<PendingTensor> tensors_;
  std::function<void()> pass_start_;
};

}  // namespace kvforge::gguf
