// Fuzz target for the tokenizers: any byte string is encoded by a
// SentencePiece vocabulary (with byte fallback) and a byte-level BPE one,
// with and without special tokens parsed. Invalid UTF-8 must be a
// TokenizerError; valid text must encode, decode back (byte-level BPE: to
// exactly the text), and encode with a token cap must agree with the full
// encoding up to the cap (the server's early stop past the context).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "app/tokenizer/tokenizer.h"
#include "app/tokenizer/utf8.h"
#include "fuzz_vocabularies.h"
#include "tokenizer_tiny_vocab.h"

namespace {

using kvforge::Tokenizer;

const Tokenizer& bpe() {
  static const Tokenizer t =
      Tokenizer::from_vocabulary(kvforge::testing::tiny_bpe_vocab({"ab", "abc",
                                                                   "\xc4\xa0"
                                                                   "a",
                                                                   "<|eot_id|>"},
                                                                  {"a b", "ab c", "\xc4\xa0 a"}));
  return t;
}

void check(const Tokenizer& t, std::string_view text, bool parse_special, bool exact) {
  const std::vector<int32_t> full = t.encode(text, false, parse_special);
  for (const size_t cap : {size_t{0}, size_t{3}, size_t{17}}) {
    const std::vector<int32_t> cut = t.encode(text, false, parse_special, cap);
    // The same tokens as far as it went; it stops only once past the cap.
    if (cut.size() > full.size() || !std::equal(cut.begin(), cut.end(), full.begin())) std::abort();
    if (cut.size() < full.size() && cut.size() <= cap) std::abort();
  }
  if (full.size() * t.max_token_bytes() < text.size()) std::abort();
  kvforge::DecodeOptions options;
  options.render_special = true;
  const std::string back = t.decode(full, options);
  if (exact && back != text) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (kvforge::find_invalid_utf8(text)) {
    try {
      (void)bpe().encode(text, false, true);
      std::abort();  // invalid UTF-8 must be refused
    } catch (const kvforge::TokenizerError&) {
    }
    return 0;
  }
  for (const bool special : {false, true}) {
    check(kvforge::fuzz::spm_with_bytes(), text, special, false);
    check(bpe(), text, special, true);
  }
  return 0;
}
