#include "app/tokenizer/utf8_stream_decoder.h"

#include <cstdint>

#include "app/tokenizer/utf8.h"

namespace kvforge {

std::string Utf8StreamDecoder::push(std::string_view bytes) {
  std::string input = std::move(pending_);
  pending_.clear();
  input.append(bytes);

  std::string out;
  out.reserve(input.size());
  size_t pos = 0;
  while (pos < input.size()) {
    const auto lead = static_cast<uint8_t>(input[pos]);
    const size_t len = utf8_expected_length(lead);
    if (len == 0) {
      append_utf8(out, kReplacementChar);
      ++pos;
      continue;
    }
    // Count how many bytes of the sequence are acceptable so far.
    size_t good = 1;
    while (good < len && pos + good < input.size() &&
           utf8_continuation_allowed(lead, good, static_cast<uint8_t>(input[pos + good]))) {
      ++good;
    }
    if (good == len) {
      out.append(input, pos, len);
    } else if (pos + good == input.size()) {
      pending_.assign(input, pos, good);  // may complete with the next chunk
    } else {
      append_utf8(out, kReplacementChar);  // the maximal subpart input[pos, pos + good)
    }
    pos += good;
  }
  return out;
}

std::string Utf8StreamDecoder::flush() {
  if (pending_.empty()) return {};
  pending_.clear();
  std::string out;
  append_utf8(out, kReplacementChar);
  return out;
}

std::string to_valid_utf8(std::string_view bytes) {
  Utf8StreamDecoder decoder;
  std::string out = decoder.push(bytes);
  out += decoder.flush();
  return out;
}

}  // namespace kvforge
