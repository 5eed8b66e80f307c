#include "app/tokenizer/byte_unicode_map.h"

#include "app/tokenizer/utf8.h"

namespace kvforge {

namespace {

bool stands_for_itself(int byte) {
  return (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) ||
         (byte >= 0xAE && byte <= 0xFF);
}

}  // namespace

const ByteUnicodeMap& ByteUnicodeMap::instance() {
  static const ByteUnicodeMap map;
  return map;
}

ByteUnicodeMap::ByteUnicodeMap() {
  byte_of_char_.fill(-1);
  char32_t next_free = 0x100;
  for (int byte = 0; byte < 256; ++byte) {
    const char32_t cp = stands_for_itself(byte) ? static_cast<char32_t>(byte) : next_free++;
    append_utf8(encoded_[byte], cp);
    byte_of_char_[cp] = static_cast<int16_t>(byte);
  }
}

void ByteUnicodeMap::encode(std::string_view text, std::string& out) const {
  for (char c : text) out.append(encoded_[static_cast<uint8_t>(c)]);
}

std::optional<uint8_t> ByteUnicodeMap::decode_char(char32_t cp) const {
  if (cp >= byte_of_char_.size() || byte_of_char_[cp] < 0) return std::nullopt;
  return static_cast<uint8_t>(byte_of_char_[cp]);
}

std::string ByteUnicodeMap::decode(std::string_view spelled) const {
  std::string out;
  out.reserve(spelled.size());
  size_t pos = 0;
  while (pos < spelled.size()) {
    const size_t len = valid_utf8_sequence_at(spelled, pos);
    if (len == 0) {  // not UTF-8 at all: pass the byte through untouched
      out.push_back(spelled[pos++]);
      continue;
    }
    const std::optional<uint8_t> byte = decode_char(decode_utf8_at(spelled, pos, len));
    if (byte) {
      out.push_back(static_cast<char>(*byte));
    } else {
      out.append(spelled, pos, len);
    }
    pos += len;
  }
  return out;
}

}  // namespace kvforge
