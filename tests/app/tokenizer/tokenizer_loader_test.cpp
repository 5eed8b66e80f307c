// Reading vocabularies from GGUF metadata: defaults, quirks and clear errors.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "app/tokenizer/tokenizer.h"
#include "app/tokenizer/vocabulary_loader.h"
#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"

namespace kvforge {
namespace {

using gguf::Value;

// A small SentencePiece vocabulary in GGUF form.
gguf::GgufWriter spm_writer() {
  gguf::GgufWriter w;
  w.set("general.name", Value::string("tiny"));
  w.set("tokenizer.ggml.model", Value::string("llama"));
  w.set("tokenizer.ggml.tokens", Value::string_array({"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a",
                                                      "\xE2\x96\x81"
                                                      "a",
                                                      "<|end|>", "<|user|>"}));
  w.set("tokenizer.ggml.scores", Value::f32_array({0, 0, 0, -1, -1, -0.5f, 0, 0}));
  w.set("tokenizer.ggml.token_type", Value::i32_array({2, 3, 3, 1, 1, 1, 3, 3}));
  return w;
}

gguf::GgufFile file_of(const gguf::GgufWriter& w) {
  const std::vector<uint8_t> bytes = w.to_bytes();
  return gguf::GgufFile::from_bytes(bytes, "tiny.gguf");
}

std::string load_error(const gguf::GgufWriter& w) {
  try {
    Tokenizer::from_gguf(file_of(w));
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TokenizerLoader, SentencePieceDefaults) {
  const Tokenizer t = Tokenizer::from_gguf(file_of(spm_writer()));
  EXPECT_EQ(t.kind(), VocabKind::SentencePiece);
  EXPECT_EQ(t.n_vocab(), 8);
  EXPECT_EQ(t.unk_id(), 0);  // SentencePiece's fixed ids when the keys are absent
  EXPECT_EQ(t.bos_id(), 1);
  EXPECT_EQ(t.eos_id(), 2);
  EXPECT_EQ(t.eot_id(), 6);  // <|end|> recognised by its spelling
  EXPECT_TRUE(t.add_bos());
  EXPECT_TRUE(t.add_space_prefix());
  EXPECT_EQ(t.encode("a", true, false), (std::vector<int32_t>{1, 5}));
  // No Phi-3 name: whitespace after <|user|> is kept ("▁" from the newline's
  // prefix... the newline itself has no piece and becomes <unk>).
  EXPECT_EQ(t.encode("<|user|>\na", false, true), (std::vector<int32_t>{7, 3, 0, 4}));
}

TEST(TokenizerLoader, KeysOverrideDefaults) {
  gguf::GgufWriter w = spm_writer();
  w.set("tokenizer.ggml.add_bos_token", Value::boolean(false));
  w.set("tokenizer.ggml.add_space_prefix", Value::boolean(false));
  w.set("tokenizer.ggml.eos_token_id", Value::u32(6));
  w.set("tokenizer.ggml.padding_token_id", Value::i32(-1));
  const Tokenizer t = Tokenizer::from_gguf(file_of(w));
  EXPECT_FALSE(t.add_bos());
  EXPECT_FALSE(t.add_space_prefix());
  EXPECT_EQ(t.eos_id(), 6);
  EXPECT_EQ(t.pad_id(), -1);
  EXPECT_EQ(t.encode("a", false, false), (std::vector<int32_t>{4}));
}

TEST(TokenizerLoader, Phi3NameTurnsOnTheRstripRule) {
  gguf::GgufWriter w = spm_writer();
  w.set("general.name", Value::string("Phi3"));
  const Tokenizer t = Tokenizer::from_gguf(file_of(w));
  EXPECT_EQ(t.encode("<|user|>\na", false, true), (std::vector<int32_t>{7, 5}));
  // <s> is exempt, as in Phi-3's tokenizer.json.
  EXPECT_EQ(t.encode("<s> a", false, true), (std::vector<int32_t>{1, 3, 5}));
}

TEST(TokenizerLoader, ErrorsNameTheProblem) {
  gguf::GgufWriter no_model = spm_writer();
  gguf::GgufWriter rebuilt;
  for (const auto& kv : no_model.metadata()) {
    if (kv.key != "tokenizer.ggml.model") rebuilt.set(kv.key, kv.value);
  }
  EXPECT_NE(load_error(rebuilt).find("tokenizer.ggml.model"), std::string::npos)
      << load_error(rebuilt);

  gguf::GgufWriter bert = spm_writer();
  bert.set("tokenizer.ggml.model", Value::string("bert"));
  EXPECT_NE(load_error(bert).find("'bert' is not supported"), std::string::npos)
      << load_error(bert);

  gguf::GgufWriter short_scores = spm_writer();
  short_scores.set("tokenizer.ggml.scores", Value::f32_array({0, 0}));
  EXPECT_NE(load_error(short_scores).find("tokenizer.ggml.scores has 2 entries, expected 8"),
            std::string::npos)
      << load_error(short_scores);

  gguf::GgufWriter bad_type = spm_writer();
  bad_type.set("tokenizer.ggml.token_type", Value::i32_array({2, 3, 3, 1, 1, 9, 3, 3}));
  EXPECT_NE(load_error(bad_type).find("token_type[5] = 9"), std::string::npos)
      << load_error(bad_type);

  gguf::GgufWriter bad_bos = spm_writer();
  bad_bos.set("tokenizer.ggml.bos_token_id", Value::u32(8));
  EXPECT_NE(load_error(bad_bos).find("tokenizer.ggml.bos_token_id = 8, expected a token id in "
                                     "[0, 8) or -1 for none"),
            std::string::npos)
      << load_error(bad_bos);

  gguf::GgufWriter bpe_without_merges = spm_writer();
  bpe_without_merges.set("tokenizer.ggml.model", Value::string("gpt2"));
  EXPECT_NE(load_error(bpe_without_merges).find("tokenizer.ggml.merges"), std::string::npos)
      << load_error(bpe_without_merges);

  gguf::GgufWriter unknown_pre = spm_writer();
  unknown_pre.set("tokenizer.ggml.model", Value::string("gpt2"));
  unknown_pre.set("tokenizer.ggml.merges", Value::string_array({"a a"}));
  unknown_pre.set("tokenizer.ggml.pre", Value::string("tekken"));
  EXPECT_NE(load_error(unknown_pre).find("tokenizer.ggml.pre 'tekken'"), std::string::npos)
      << load_error(unknown_pre);

  gguf::GgufWriter bad_merge = spm_writer();
  bad_merge.set("tokenizer.ggml.model", Value::string("gpt2"));
  bad_merge.set("tokenizer.ggml.merges", Value::string_array({"nospace"}));
  EXPECT_NE(load_error(bad_merge).find("tokenizer.ggml.merges[0] = 'nospace'"), std::string::npos)
      << load_error(bad_merge);
}

// Every special token id names a token of the vocabulary, or is -1 ("none",
// as some converters write it): -5 or an id past the end was read as "none"
// or kept, and generation then never stopped at that eos.
TEST(TokenizerLoader, SpecialTokenIdsOutsideTheVocabularyAreRefused) {
  struct Case {
    const char* key;
    Value value;
    const char* shown;
  };
  // sep, cls and mask are not read by kvforge, but a file with them outside is malformed too.
  for (const Case& c :
       {Case{"tokenizer.ggml.eos_token_id", Value::i32(-5), "-5"},
        Case{"tokenizer.ggml.bos_token_id", Value::i64(-2), "-2"},
        Case{"tokenizer.ggml.unknown_token_id", Value::u32(9), "9"},
        Case{"tokenizer.ggml.eot_token_id", Value::u32(8), "8"},
        Case{"tokenizer.ggml.eom_token_id", Value::i32(-7), "-7"},
        Case{"tokenizer.ggml.padding_token_id", Value::u32(4294967295u), "4294967295"},
        Case{"tokenizer.ggml.seperator_token_id", Value::u32(100), "100"},
        Case{"tokenizer.ggml.cls_token_id", Value::i32(-3), "-3"},
        Case{"tokenizer.ggml.mask_token_id", Value::u32(8), "8"}}) {
    SCOPED_TRACE(c.key);
    gguf::GgufWriter w = spm_writer();
    w.set(c.key, c.value);
    const std::string what = load_error(w);
    EXPECT_NE(what.find(std::string("tiny.gguf: ") + c.key + " = " + c.shown +
                        ", expected a token id in [0, 8) or -1 for none"),
              std::string::npos)
        << what;
  }
}

TEST(TokenizerLoader, MinusOneMeansNoToken) {
  gguf::GgufWriter w = spm_writer();
  w.set("tokenizer.ggml.eot_token_id", Value::i32(-1));
  w.set("tokenizer.ggml.padding_token_id", Value::i64(-1));
  w.set("tokenizer.ggml.seperator_token_id", Value::i32(-1));
  w.set("tokenizer.ggml.eos_token_id", Value::u32(7));  // the last token
  const Tokenizer t = Tokenizer::from_gguf(file_of(w));
  EXPECT_EQ(t.pad_id(), -1);
  EXPECT_EQ(t.eos_id(), 7);
  EXPECT_EQ(t.eot_id(), 6);  // none in the file: found by its spelling, as when absent
}

TEST(TokenizerLoader, NanScoreIsRefused) {
  gguf::GgufWriter w = spm_writer();
  w.set("tokenizer.ggml.scores",
        Value::f32_array({0, 0, 0, -1, std::numeric_limits<float>::quiet_NaN(), -0.5f, 0, 0}));
  EXPECT_NE(load_error(w).find("tiny.gguf: tokenizer.ggml.scores[4] = nan"), std::string::npos)
      << load_error(w);
}

}  // namespace
}  // namespace kvforge
