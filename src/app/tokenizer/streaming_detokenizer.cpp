#include "app/tokenizer/streaming_detokenizer.h"

#include <utility>

namespace kvforge {

StreamingDetokenizer::StreamingDetokenizer(Tokenizer tokenizer, DecodeOptions options)
    : tokenizer_(std::move(tokenizer)), options_(options) {}

std::string StreamingDetokenizer::push(int32_t id) {
  if (options_.skip_bos && id == tokenizer_.bos_id()) return {};
  std::string piece = tokenizer_.token_to_piece(id, options_.render_special);
  if (at_start_ && !piece.empty()) {
    at_start_ = false;
    const bool prefixed =
        tokenizer_.kind() == VocabKind::SentencePiece && tokenizer_.add_space_prefix();
    if (options_.strip_space_prefix && prefixed && piece.front() == ' ') piece.erase(0, 1);
  }
  return utf8_.push(piece);
}

std::string StreamingDetokenizer::flush() { return utf8_.flush(); }

void StreamingDetokenizer::reset() {
  utf8_ = Utf8StreamDecoder();
  at_start_ = true;
}

}  // namespace kvforge
