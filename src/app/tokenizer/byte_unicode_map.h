// The byte <-> character mapping of byte-level BPE (GPT-2 and its
// descendants: LLaMA-3, Qwen2, ...).
//
// Byte-level vocabularies spell every byte as one printable Unicode
// character so that BPE can work on text: the 188 bytes that are already
// printable and not spaces ('!'..'~', U+00A1..U+00AC, U+00AE..U+00FF) stand
// for themselves, the remaining 68 (controls, space, U+00A0, U+00AD) are
// mapped in increasing order to U+0100, U+0101, ... (so ' ' is 'Ġ' U+0120 and
// '\n' is 'Ċ' U+010A). Every vocabulary entry is a string of such characters.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kvforge {

class ByteUnicodeMap {
 public:
  static const ByteUnicodeMap& instance();

  // The UTF-8 spelling of the character standing for `byte` (1 or 2 bytes).
  std::string_view encode_byte(uint8_t byte) const { return encoded_[byte]; }
  // Appends the byte-level spelling of raw `text`.
  void encode(std::string_view text, std::string& out) const;
  // The byte a character stands for, or nullopt if it stands for none.
  std::optional<uint8_t> decode_char(char32_t cp) const;
  // Reverses encode(); characters that stand for no byte are kept as their
  // UTF-8 (vocabularies may hold such tokens, e.g. added plain-text ones).
  std::string decode(std::string_view spelled) const;

 private:
  ByteUnicodeMap();
  std::array<std::string, 256> encoded_;
  std::array<int16_t, 512> byte_of_char_;  // code point (< 512) -> byte, -1 if none
};

}  // namespace kvforge
