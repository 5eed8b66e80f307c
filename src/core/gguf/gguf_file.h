// Reader of GGUF files (versions 2 and 3), memory-mapped.
//
// Every file is treated as hostile: counts, string lengths, dimensions, types,
// offsets and sizes are checked against the file size with overflow-safe
// arithmetic before anything is allocated or read. Errors are GgufError whose
// message names the file, the key or tensor, and what was expected vs found.
//
// Layout (GGUF spec): magic "GGUF", u32 version, u64 tensor_count,
// u64 metadata_kv_count, metadata KVs, tensor infos, padding to
// `general.alignment` (default 32), tensor data. Tensor offsets are relative
// to the start of the data section and must be multiples of the alignment.
//
// What the reader accepts (beyond the spec's letter, decided here):
//  - n_dims is 1..4 and every dimension is >= 1: a zero-sized tensor carries
//    nothing, and rejecting it means every tensor has a non-empty data span;
//    the element count must fit in int64 (ggml's ne type);
//  - dims[0] is a multiple of the type's block size;
//  - tensor data lies inside the file and no two tensors overlap (they need
//    not be stored in info order);
//  - `general.alignment` may be any integer type; its value is a power of two
//    from 1 to 2^31 (the largest a uint32, its type in the spec, can hold);
//  - bool values are 0 or 1; arrays nest at most kMaxArrayDepth deep;
//  - duplicate keys or tensor names are errors;
//  - a file with no tensors may end right after its metadata, without padding.
// Memory used is linear in the file size (each metadata value costs at most
// sizeof(Value) per encoded byte), and nothing is reserved before a count has
// been bounded by the bytes that remain.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/gguf/gguf_value.h"

namespace kvforge::gguf {

class GgufError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

constexpr size_t kMaxDims = 4;
constexpr size_t kDefaultAlignment = 32;

struct TensorInfo {
  std::string name;
  std::vector<uint64_t> dims;  // ne[0] first: dims[0] is the contiguous (fastest) dimension
  GgmlType type = GgmlType::F32;
  uint64_t offset = 0;  // relative to the start of the data section
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;
};

class GgufFile {
 public:
  // Memory-maps `path` and parses it. Throws GgufError.
  static GgufFile open(const std::filesystem::path& path);
  // Parses bytes held in memory (copied); `name` is used in error messages.
  static GgufFile from_bytes(std::span<const uint8_t> bytes, std::string name = "<memory>");

  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  ~GgufFile();

  const std::string& name() const;
  uint32_t version() const;
  uint64_t alignment() const;
  uint64_t file_size() const;
  // Absolute offset of the tensor data section (end of tensor infos rounded up
  // to the alignment); may lie past file_size() when the file has no tensors.
  uint64_t data_offset() const;

  const std::vector<KeyValue>& metadata() const;
  const Value* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Typed getters. Each throws GgufError naming the key when it is missing or
  // has an incompatible type ("key 'llama.block_count': expected integer, got string").
  // Integer getters accept any integer type whose value fits.
  std::string get_string(std::string_view key) const;
  uint64_t get_u64(std::string_view key) const;
  uint32_t get_u32(std::string_view key) const;
  int64_t get_i64(std::string_view key) const;
  float get_f32(std::string_view key) const;  // accepts FLOAT32/FLOAT64
  bool get_bool(std::string_view key) const;
  std::vector<std::string> get_string_array(std::string_view key) const;
  std::vector<float> get_f32_array(std::string_view key) const;
  std::vector<int32_t> get_i32_array(std::string_view key) const;
  // The same, returning the fallback when the key is absent (wrong type still throws).
  std::string get_string_or(std::string_view key, std::string fallback) const;
  uint32_t get_u32_or(std::string_view key, uint32_t fallback) const;
  float get_f32_or(std::string_view key, float fallback) const;
  bool get_bool_or(std::string_view key, bool fallback) const;

  const std::vector<TensorInfo>& tensors() const;
  const TensorInfo* find_tensor(std::string_view name) const;
  // The tensor's bytes inside the mapping (bounds already checked at open).
  std::span<const uint8_t> tensor_data(const TensorInfo& t) const;
  // For tensor bytes copied elsewhere and no longer read here: a mapped
  // file drops the range's whole pages from resident memory (MappedFile::
  // release; they are read again from the file if touched). Bytes held in
  // memory (from_bytes) stay as they are.
  void release_pages(std::span<const uint8_t> range) const;

 private:
  struct Impl;
  explicit GgufFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvforge::gguf
