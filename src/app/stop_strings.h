// Finds stop strings in streamed text. The detokenizer hands over pieces as
// they are decoded, and a stop string may span pieces ("Hel" + "lo" for
// "llo"). Text is released only once it can no longer be part of a stop
// string: the longest suffix that is a proper prefix of some stop string is
// held back, as OpenAI-compatible servers do, and released by finish() if the
// stream ends without a stop. Matching is on bytes; valid UTF-8 stop strings
// never start with a continuation byte, so the split never cuts a character
// that was whole in the input.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvforge {

class StopStringMatcher {
 public:
  // Throws std::invalid_argument for an empty stop string (it would match
  // before any text). No stop strings: every piece passes straight through.
  explicit StopStringMatcher(std::vector<std::string> stops);

  // Appends a piece; returns the text now safe to emit (possibly empty). When
  // a stop string completes, returns the text before its earliest occurrence
  // and ignores every later piece.
  std::string feed(std::string_view piece);
  // End of stream: returns the held-back text (empty after a stop).
  std::string finish();

  bool stopped() const { return matched_.has_value(); }
  // Index into the stop list of the string that ended the text. When several
  // complete at once, the earliest occurrence wins, then the first listed.
  std::optional<size_t> matched() const { return matched_; }
  // Everything emitted so far; after a stop, the final text cut before it.
  const std::string& text() const { return text_; }

 private:
  size_t longest_partial_suffix() const;
  std::string emit(size_t n);

  std::vector<std::string> stops_;
  std::string held_;  // fed but not yet emitted; shorter than the longest stop string
  std::string text_;
  std::optional<size_t> matched_;
  bool finished_ = false;
};

}  // namespace kvforge
