// previous_response_id's prompt (responses_history.h): the stored turn's
// token ids, then the rest tokenized, when the rendered conversation
// continues the stored prompt text and reply; the rendered text's own tokens
// otherwise.
#include "app/server/responses_history.h"

#include <gtest/gtest.h>

#include "tokenizer_tiny_vocab.h"

namespace kvforge::server {
namespace {

using nlohmann::ordered_json;

StoredResponse stored(const Tokenizer& t) {
  StoredResponse s;
  s.prompt_text = "<s>user: hi</s>assistant:";
  s.prompt_ids = t.encode(s.prompt_text, false, true);
  // As a model may generate it: "hi" spelled by two byte tokens, not as the tokenizer would.
  s.output_ids = testing::ids_of(t.vocabulary(), {"h", "i"});
  s.output_text = "hi";
  s.messages = ordered_json::array(
      {{{"role", "user"}, {"content", "hi"}}, {{"role", "assistant"}, {"content", "hi"}}});
  return s;
}

Tokenizer bpe() {
  Vocabulary v = testing::tiny_bpe_vocab({"hi", "<s>", "</s>"}, {"h i"});
  const std::vector<int32_t> ids = testing::ids_of(v, {"<s>", "</s>"});
  for (const int32_t id : ids) v.types[size_t(id)] = TokenType::Control;
  v.bos_id = ids[0];
  v.eos_id = ids[1];
  return Tokenizer::from_vocabulary(v);
}

TEST(ResponsesHistory, ContinuedPromptStartsWithTheStoredIds) {
  const Tokenizer t = bpe();
  const StoredResponse s = stored(t);
  const std::string text = s.prompt_text + "hi</s>user: more</s>assistant:";
  std::vector<int32_t> tokens = t.encode(text, false, true);
  const std::vector<int32_t> natural = tokens;
  EXPECT_EQ(continue_stored_tokens(s, text, t, tokens), s.prompt_ids.size() + 2);
  std::vector<int32_t> want = s.prompt_ids;
  want.insert(want.end(), s.output_ids.begin(), s.output_ids.end());
  const std::vector<int32_t> rest = t.encode("</s>user: more</s>assistant:", false, true);
  want.insert(want.end(), rest.begin(), rest.end());
  EXPECT_EQ(tokens, want);
  EXPECT_NE(tokens, natural);  // the natural tokens merge "hi": no prefix hit
  EXPECT_EQ(t.decode(tokens, {.skip_bos = false, .render_special = true}),
            t.decode(natural, {.skip_bos = false, .render_special = true}));
}

TEST(ResponsesHistory, AConversationThatRewritesTheReplyKeepsItsOwnTokens) {
  const Tokenizer t = bpe();
  const StoredResponse s = stored(t);
  for (const std::string& text :
       {s.prompt_text + "HI</s>user: more", std::string("other"), s.prompt_text + "hi"}) {
    std::vector<int32_t> tokens = t.encode(text, false, true);
    const std::vector<int32_t> natural = tokens;
    EXPECT_EQ(continue_stored_tokens(s, text, t, tokens), 0u) << text;
    EXPECT_EQ(tokens, natural);
  }
}

TEST(ResponsesHistory, SentencePieceRestNeedsASpecialTokenFirst) {
  const Tokenizer t = Tokenizer::from_vocabulary(
      testing::tiny_spm_vocab({{"h", -1}, {"i", -1}, {"\xe2\x96\x81", -1}}, true));
  StoredResponse s;
  s.prompt_text = "h";
  s.prompt_ids = t.encode("h", false, true);
  s.output_ids = t.encode("i", false, true);
  s.output_text = "i";
  std::vector<int32_t> plain = t.encode("hih", false, true);
  EXPECT_EQ(continue_stored_tokens(s, "hih", t, plain), 0u);  // "h" alone would get a space
  std::vector<int32_t> special = t.encode("hi</s>h", false, true);
  EXPECT_EQ(continue_stored_tokens(s, "hi</s>h", t, special),
            s.prompt_ids.size() + s.output_ids.size());
}

TEST(ResponsesHistory, MessagesCarryTheNewInstructionsNotTheOld) {
  StoredResponse s;
  s.instructions = "old";
  s.messages = ordered_json::array(
      {{{"role", "user"}, {"content", "a"}}, {{"role", "assistant"}, {"content", "b"}}});
  const ordered_json input = ordered_json::array({{{"role", "user"}, {"content", "c"}}});
  const ordered_json m = conversation_messages("new", &s, input);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0]["role"], "system");
  EXPECT_EQ(m[0]["content"], "new");
  EXPECT_EQ(m[3]["content"], "c");
  EXPECT_EQ(conversation_messages(nullptr, &s, input).size(), 3u);
  const ordered_json after = conversation_after(
      &s, input, ordered_json::array({{{"role", "assistant"}, {"content", "d"}}}));
  ASSERT_EQ(after.size(), 4u);
  EXPECT_EQ(after[3]["content"], "d");
}

}  // namespace
}  // namespace kvforge::server
