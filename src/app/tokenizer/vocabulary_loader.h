// Reading a Vocabulary from the tokenizer.ggml.* metadata of a GGUF file.
#pragma once

#include "app/tokenizer/vocabulary.h"
#include "core/gguf/gguf_file.h"

namespace kvforge {

// Keys read: tokenizer.ggml.{model, pre, tokens, scores, token_type, merges,
// bos/eos/eot/eom/unknown/padding_token_id, add_bos_token, add_space_prefix},
// general.name (for model-specific special-token whitespace rules).
// Throws TokenizerError (or gguf::GgufError for malformed values) naming the file and key.
Vocabulary load_vocabulary(const gguf::GgufFile& file);

}  // namespace kvforge
