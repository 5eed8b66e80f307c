// UTF-8 validation and the streaming decoder that turns token bytes into text.
#include <gtest/gtest.h>

#include <string>

#include "app/tokenizer/byte_unicode_map.h"
#include "app/tokenizer/utf8.h"
#include "app/tokenizer/utf8_stream_decoder.h"

namespace kvforge {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(TokenizerUtf8, FindsFirstInvalidByte) {
  EXPECT_EQ(find_invalid_utf8("plain ascii"), std::nullopt);
  EXPECT_EQ(find_invalid_utf8("h\xC3\xA9 \xE2\x82\xAC \xF0\x9F\xA6\x99"),
            std::nullopt);                                             // é € 🦙
  EXPECT_EQ(find_invalid_utf8("ab\x80"), 2u);                          // stray continuation
  EXPECT_EQ(find_invalid_utf8("a\xC0\xAF"), 1u);                       // overlong '/'
  EXPECT_EQ(find_invalid_utf8("a\xE0\x80\xAF"), 1u);                   // overlong 3-byte
  EXPECT_EQ(find_invalid_utf8("\xED\xA0\x80"), 0u);                    // surrogate U+D800
  EXPECT_EQ(find_invalid_utf8("\xF4\x90\x80\x80"), 0u);                // above U+10FFFF
  EXPECT_EQ(find_invalid_utf8("ok\xE2\x82"), 2u);                      // cut off at the end
  EXPECT_EQ(find_invalid_utf8(std::string("a\0b", 3)), std::nullopt);  // NUL is valid
}

TEST(TokenizerUtf8, EncodeDecodeCodePoints) {
  for (char32_t cp : {U'\u0000', U'A', U'\u00E9', U'\u07FF', U'\u0800', U'\u2581', U'\uFFFD',
                      U'\U00010000', U'\U0001F999', U'\U0010FFFF'}) {
    std::string s;
    append_utf8(s, cp);
    const size_t len = valid_utf8_sequence_at(s, 0);
    ASSERT_EQ(len, s.size()) << static_cast<uint32_t>(cp);
    EXPECT_EQ(decode_utf8_at(s, 0, len), cp);
  }
}

TEST(TokenizerUtf8, StreamHoldsBackSplitCharacters) {
  Utf8StreamDecoder decoder;
  // "🦙" arrives one byte at a time, as four byte-fallback tokens would deliver it.
  EXPECT_EQ(decoder.push("a\xF0"), "a");
  EXPECT_TRUE(decoder.has_pending());
  EXPECT_EQ(decoder.push("\x9F"), "");
  EXPECT_EQ(decoder.push("\xA6"), "");
  EXPECT_EQ(decoder.push("\x99!"), "\xF0\x9F\xA6\x99!");
  EXPECT_FALSE(decoder.has_pending());
  EXPECT_EQ(decoder.flush(), "");
  // A 2-byte and a 3-byte character split across chunks.
  EXPECT_EQ(decoder.push("\xC3"), "");
  EXPECT_EQ(decoder.push("\xA9\xE2\x82"), "\xC3\xA9");
  EXPECT_EQ(decoder.push("\xAC"), "\xE2\x82\xAC");
}

TEST(TokenizerUtf8, StreamReplacesInvalidBytesByMaximalSubpart) {
  Utf8StreamDecoder decoder;
  EXPECT_EQ(decoder.push("a\x80z"), "a" + kFffd + "z");
  // A truncated sequence followed by ASCII is one U+FFFD, and the ASCII survives.
  EXPECT_EQ(decoder.push("\xE2\x82"), "");
  EXPECT_EQ(decoder.push("A"), kFffd + "A");
  // Bytes that can never appear, each their own U+FFFD.
  EXPECT_EQ(decoder.push("\xC0\xFF"), kFffd + kFffd);
  // E0 80: 80 is not allowed after E0 (overlong), so E0 alone is the subpart.
  EXPECT_EQ(decoder.push("\xE0\x80"), kFffd + kFffd);
  // Surrogate ED A0 80: ED is a subpart, A0 and 80 stray continuations.
  EXPECT_EQ(decoder.push("\xED\xA0\x80"), kFffd + kFffd + kFffd);
}

TEST(TokenizerUtf8, FlushTurnsDanglingPrefixIntoOneReplacement) {
  Utf8StreamDecoder decoder;
  EXPECT_EQ(decoder.push("x\xF0\x9F\xA6"), "x");
  EXPECT_EQ(decoder.flush(), kFffd);
  EXPECT_FALSE(decoder.has_pending());
  EXPECT_EQ(decoder.flush(), "");
  EXPECT_EQ(to_valid_utf8("ok\xE2\x82"), "ok" + kFffd);
  EXPECT_EQ(to_valid_utf8("\xF0\x9F\xA6\x99"), "\xF0\x9F\xA6\x99");
}

TEST(TokenizerUtf8, ByteLevelMappingIsABijection) {
  const ByteUnicodeMap& map = ByteUnicodeMap::instance();
  // GPT-2's spelling: space is 'Ġ' (U+0120), newline 'Ċ' (U+010A), printable ASCII itself.
  EXPECT_EQ(map.encode_byte(' '), "\xC4\xA0");
  EXPECT_EQ(map.encode_byte('\n'), "\xC4\x8A");
  EXPECT_EQ(map.encode_byte('A'), "A");
  EXPECT_EQ(map.encode_byte(0xAD), "\xC5\x83");  // soft hyphen is the last remapped byte: U+0143
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes.push_back(static_cast<char>(b));
  std::string spelled;
  map.encode(all_bytes, spelled);
  EXPECT_EQ(find_invalid_utf8(spelled), std::nullopt);
  EXPECT_EQ(map.decode(spelled), all_bytes);
  // A character that stands for no byte is kept as is.
  EXPECT_EQ(map.decode("\xE2\x96\x81"), "\xE2\x96\x81");
}

}  // namespace
}  // namespace kvforge
