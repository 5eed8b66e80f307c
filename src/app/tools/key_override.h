// A metadata key that `kvforge quantize --override-kv KEY=TYPE:VALUE` sets in
// the file it writes, in llama-quantize's notation: TYPE is int (written as
// UINT32, as llama-quantize writes it), float (FLOAT32), bool (true or false)
// or str. Marking a converted file's embedding pooling
// (`qwen3.pooling_type=int:3`) is what it is for.
#pragma once

#include <string>
#include <string_view>

#include "core/gguf/gguf_value.h"

namespace kvforge {

struct KeyOverride {
  std::string key;
  gguf::Value value;
};

// Throws std::invalid_argument quoting `text` and saying what was expected:
// no '=' or an empty key, an unknown TYPE, a value that is not of its TYPE
// (an int outside 0..4294967295, a non-finite float).
KeyOverride parse_key_override(std::string_view text);

}  // namespace kvforge
