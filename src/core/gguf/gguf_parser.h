// Parsing of a whole GGUF image held in memory (internal to the reader; use
// GgufFile). Separate from GgufFile so that the mapping, ownership and typed
// getters stay apart from the hostile-input checks.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_value.h"

namespace kvforge::gguf {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
// Name → index into ParsedGguf::metadata or ::tensors; lookups by string_view.
using NameIndex = std::unordered_map<std::string, size_t, StringHash, std::equal_to<>>;

struct ParsedGguf {
  uint32_t version = 0;
  uint64_t alignment = kDefaultAlignment;
  // Absolute offset of the data section: the end of the tensor infos rounded up
  // to the alignment. With no tensors the file may end before it (writers do
  // not pad a file that holds only metadata).
  uint64_t data_offset = 0;
  std::vector<KeyValue> metadata;   // in file order
  std::vector<TensorInfo> tensors;  // in file order
  NameIndex key_index;
  NameIndex tensor_index;
};

// Parses and validates `bytes`; `name` prefixes every error message. Throws GgufError.
// On return every tensor's [data_offset + offset, + n_bytes) lies inside `bytes`.
ParsedGguf parse_gguf(std::span<const uint8_t> bytes, std::string_view name);

}  // namespace kvforge::gguf
