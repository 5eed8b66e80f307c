#include "engine/sampling/grammar/utf8_ranges.h"

#include <gtest/gtest.h>

#include <random>

#include "grammar_test_util.h"

namespace kvforge {
namespace {

bool seq_matches(const ByteRangeSeq& seq, const std::string& bytes) {
  if (seq.size() != bytes.size()) return false;
  for (size_t i = 0; i < seq.size(); ++i)
    if (uint8_t(bytes[i]) < seq[i].first || uint8_t(bytes[i]) > seq[i].second) return false;
  return true;
}

// Every code point's encoding is matched by the sequences exactly when the
// code point is in the ranges, and by at most one sequence.
TEST(Utf8Ranges, SequencesCoverExactlyTheRanges) {
  std::mt19937 rng(3);
  const std::vector<std::vector<CodeRange>> cases = {
      {{0, kMaxCodePoint}},
      {{0x41, 0x5A}, {0x7F, 0x80}, {0x7FF, 0x800}, {0xD7FF, 0xE000}, {0xFFFF, 0x10000}},
      {{0x10FFFE, 0x10FFFF}, {0x3B1, 0x3C9}},
  };
  for (const auto& ranges : cases) {
    const auto seqs = utf8_sequences(normalize_ranges(ranges, false));
    for (uint32_t cp = 0; cp <= kMaxCodePoint; cp += (cp < 0x20000 ? 1 : 1 + rng() % 64)) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      std::string enc;
      append_utf8(enc, cp);
      int hits = 0;
      for (const auto& s : seqs) hits += seq_matches(s, enc);
      bool in = false;
      for (auto [lo, hi] : ranges) in = in || (lo <= cp && cp <= hi);
      ASSERT_EQ(hits, in ? 1 : 0) << "code point " << cp;
    }
  }
}

TEST(Utf8Ranges, NegationAndDecoding) {
  const auto neg = normalize_ranges({{'a', 'c'}, {'b', 'z'}}, true);
  ASSERT_EQ(neg.size(), 2u);
  EXPECT_EQ(neg[0], CodeRange(0, 'a' - 1));
  EXPECT_EQ(neg[1], CodeRange('z' + 1, kMaxCodePoint));
  size_t pos = 0;
  EXPECT_EQ(decode_utf8("\xE2\x82\xAC", pos), 0x20ACu);
  EXPECT_EQ(pos, 3u);
  pos = 0;
  EXPECT_EQ(decode_utf8("\xC0\xAF", pos), kInvalidCodePoint);  // overlong
  pos = 0;
  EXPECT_EQ(decode_utf8("\xED\xA0\x80", pos), kInvalidCodePoint);  // surrogate
}

}  // namespace
}  // namespace kvforge
