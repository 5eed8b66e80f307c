// UTF-8 for the grammar compiler: decoding a character of grammar text, and
// lowering a set of code point ranges to byte-range sequences, so a matcher
// over bytes accepts exactly the UTF-8 encodings of the set (surrogates,
// which have no UTF-8 form, are left out).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvforge {

constexpr uint32_t kInvalidCodePoint = 0xFFFFFFFF;
constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// Decodes the character at s[pos] and moves pos past it; kInvalidCodePoint
// (pos moved by one) for ill-formed, overlong or surrogate encodings.
uint32_t decode_utf8(std::string_view s, size_t& pos);
void append_utf8(std::string& out, uint32_t cp);

using CodeRange = std::pair<uint32_t, uint32_t>;  // inclusive

// Sorted, merged ranges; with `negate`, their complement in [0, U+10FFFF].
std::vector<CodeRange> normalize_ranges(std::vector<CodeRange> ranges, bool negate);

// One byte range per encoded byte: the sequence matches bytes b0 b1 ... with
// lo_i <= b_i <= hi_i.
using ByteRangeSeq = std::vector<std::pair<uint8_t, uint8_t>>;
// The UTF-8 encodings of `ranges` (normalized) as a union of sequences.
std::vector<ByteRangeSeq> utf8_sequences(const std::vector<CodeRange>& ranges);

}  // namespace kvforge
