// HarmonyReader: gpt-oss replies (the text after the prompt's
// "<|start|>assistant", special tokens rendered) read into reasoning,
// content and calls, whole and fed byte by byte. The reply shapes are the
// ones llama.cpp's gpt-oss parser accepts (common/parsers/gpt-oss.cpp):
// analysis then final; a call with the recipient in the channel header or
// in the role header; a commentary preamble; built-in tool messages.
#include "app/chat/harmony_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tool_call_deltas.h"

namespace kvforge {
namespace harmony_reader_test {

struct Read {
  std::string reasoning, content;
  std::vector<ToolCall> calls;  // rebuilt from the deltas
};

Read read(const std::string& text, size_t piece, bool reasoning = true) {
  HarmonyReader reader(reasoning);
  Read r;
  auto take = [&](const HarmonyReader::Output& out) {
    r.reasoning += out.reasoning;
    r.content += out.content;
    testing::add_call_deltas(out.calls, r.calls);
  };
  for (size_t i = 0; i < text.size(); i += piece) take(reader.feed(text.substr(i, piece)));
  take(reader.finish());
  EXPECT_EQ(reader.calls().size(), r.calls.size());
  return r;
}

TEST(HarmonyReader, AnalysisIsReasoningFinalIsContent) {
  const std::string text =
      "<|channel|>analysis<|message|>The user greets. Reply <politely>.<|end|>"
      "<|start|>assistant<|channel|>final<|message|>Hello! <|end of nothing";
  for (size_t piece : {size_t(1), size_t(5), text.size()}) {
    const Read r = read(text, piece);
    EXPECT_EQ(r.reasoning, "The user greets. Reply <politely>.") << piece;
    EXPECT_EQ(r.content, "Hello! <|end of nothing") << piece;
    EXPECT_TRUE(r.calls.empty());
  }
}

TEST(HarmonyReader, CallsWithTheRecipientInEitherHeader) {
  const std::string in_channel =
      "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}";
  const std::string in_role =
      " to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}";
  for (const std::string& text : {in_channel, in_role})
    for (size_t piece : {size_t(1), size_t(7), text.size()}) {
      const Read r = read(text, piece);
      ASSERT_EQ(r.calls.size(), 1u) << text;
      EXPECT_EQ(r.calls[0].name, "get_weather");
      EXPECT_EQ(r.calls[0].arguments, "{\"city\": \"Paris\"}");
      EXPECT_EQ(r.content, "");
    }
  EXPECT_EQ(read(in_channel, 1).reasoning, "Need weather.");
}

TEST(HarmonyReader, PreambleIsContentBuiltInToolsAreDropped) {
  const Read r = read(
      "<|channel|>commentary<|message|>Let me check.<|end|><|start|>assistant<|channel|>"
      "analysis to=browser.search<|message|>{\"q\": \"x\"}<|end|><|start|>assistant<|channel|>"
      "commentary to=functions.add<|message|>{\"a\": 1}<|end|><|start|>assistant to=functions.add"
      "<|channel|>commentary<|message|>{\"a\": 2}",
      3);
  EXPECT_EQ(r.content, "Let me check.");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].arguments, "{\"a\": 1}");
  EXPECT_EQ(r.calls[1].arguments, "{\"a\": 2}");
}

TEST(HarmonyReader, WithoutReasoningTheAnalysisIsContentWithItsMarkup) {
  const Read r = read(
      "<|channel|>analysis<|message|>hmm<|end|><|start|>assistant<|channel|>final<|message|>ok", 2,
      /*reasoning=*/false);
  EXPECT_EQ(r.reasoning, "");
  EXPECT_EQ(r.content, "<|channel|>analysis<|message|>hmm<|end|>ok");
}

TEST(HarmonyReader, AReplyWithoutAHeaderIsPlainContent) {
  for (const std::string text : {"{\"a\": 1}", " tomorrow", "<|chan", ""})
    EXPECT_EQ(read(text, 1).content, text);
}

}  // namespace harmony_reader_test
}  // namespace kvforge
