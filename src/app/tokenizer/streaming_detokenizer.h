// Token-by-token decoding for streamed generation.
//
// Each push() returns only text that is complete UTF-8: a character whose
// bytes arrive in several tokens (<0xE2> <0x9C> <0x85>, or byte-level BPE
// pieces) is emitted once its last byte arrives. flush() ends the stream.
// The concatenation of all push() results and flush() equals
// Tokenizer::decode() of the same ids with the same options.
#pragma once

#include <cstdint>
#include <string>

#include "app/tokenizer/tokenizer.h"
#include "app/tokenizer/utf8_stream_decoder.h"

namespace kvforge {

class StreamingDetokenizer {
 public:
  explicit StreamingDetokenizer(Tokenizer tokenizer, DecodeOptions options = {});

  // Newly complete text after `id` (possibly empty). Throws TokenizerError on a bad id.
  std::string push(int32_t id);
  // End of stream: a dangling partial character becomes U+FFFD.
  std::string flush();
  // Ready for a new, independent sequence.
  void reset();

 private:
  Tokenizer tokenizer_;
  DecodeOptions options_;
  Utf8StreamDecoder utf8_;
  bool at_start_ = true;  // nothing emitted yet: the SentencePiece space prefix is still ahead
};

}  // namespace kvforge
