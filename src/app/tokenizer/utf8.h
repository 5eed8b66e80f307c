// Small UTF-8 helpers shared by the encoders and the decoders.
//
// "Valid" follows RFC 3629 / Unicode 15 table 3-7: no overlong forms, no
// surrogates (U+D800..U+DFFF), nothing above U+10FFFF.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kvforge {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// Number of bytes of a sequence whose first byte is `lead` (1..4), or 0 when
// `lead` can never start a valid sequence (continuation bytes, C0, C1, F5..FF).
size_t utf8_expected_length(uint8_t lead);

// Whether `b` may be byte number `index` (1..3) of a sequence starting with
// `lead`. The narrow ranges after E0/ED/F0/F4 exclude overlong forms,
// surrogates and code points above U+10FFFF.
bool utf8_continuation_allowed(uint8_t lead, size_t index, uint8_t b);

// Length of the longest valid UTF-8 sequence starting at text[pos]: 1..4, or
// 0 when the bytes there are not a complete valid sequence (ill-formed, or cut
// off by the end of `text`).
size_t valid_utf8_sequence_at(std::string_view text, size_t pos);

// Byte offset of the first byte that does not start a complete valid
// sequence, or nullopt when all of `text` is valid UTF-8.
std::optional<size_t> find_invalid_utf8(std::string_view text);

// Appends the UTF-8 encoding of `cp` (must be a Unicode scalar value).
void append_utf8(std::string& out, char32_t cp);

// Decodes the valid sequence of `len` bytes at text[pos] (len from valid_utf8_sequence_at).
char32_t decode_utf8_at(std::string_view text, size_t pos, size_t len);

}  // namespace kvforge
