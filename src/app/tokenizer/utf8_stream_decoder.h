// Turns a stream of byte chunks (token pieces) into valid UTF-8 text.
//
// Tokens do not respect character boundaries: byte-fallback tokens (<0xE2>)
// and byte-level BPE tokens can each carry part of a multi-byte character.
// push() emits everything that is complete and holds back a trailing prefix
// that may still become a valid character (at most 3 bytes). Ill-formed bytes
// become U+FFFD, one per maximal subpart (the Unicode / WHATWG practice:
// "\xE2\x82" followed by "A" gives U+FFFD then "A", not two U+FFFD).
#pragma once

#include <string>
#include <string_view>

namespace kvforge {

class Utf8StreamDecoder {
 public:
  // Returns the newly complete text (possibly empty), always valid UTF-8.
  std::string push(std::string_view bytes);
  // End of stream: a held-back incomplete sequence becomes one U+FFFD.
  std::string flush();
  bool has_pending() const { return !pending_.empty(); }

 private:
  std::string pending_;  // incomplete sequence carried to the next push, <= 3 bytes
};

// Whole-string form: `bytes` with every ill-formed subpart replaced by U+FFFD.
std::string to_valid_utf8(std::string_view bytes);

}  // namespace kvforge
