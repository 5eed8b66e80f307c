// ReasoningReader: <think>...</think> at a reply's start split off as the
// reasoning, whole or fed in every split, with the prompt opening it or not.
#include "app/chat/reasoning_reader.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace kvforge {
namespace reasoning_reader_test {

struct Split {
  std::string reasoning, content;
};

Split read(ReasoningFormat format, bool opened, const std::vector<std::string>& pieces) {
  ReasoningReader r(format, opened);
  Split out;
  for (const std::string& p : pieces) {
    ReasoningDelta d = r.feed(p);
    out.reasoning += d.reasoning;
    out.content += d.content;
  }
  ReasoningDelta d = r.finish();
  out.reasoning += d.reasoning;
  out.content += d.content;
  return out;
}

// Every way of cutting `text` in two and in single bytes gives the whole-text result.
void expect_any_split(ReasoningFormat format, bool opened, const std::string& text,
                      const std::string& reasoning, const std::string& content) {
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    const Split s = read(format, opened, {text.substr(0, cut), text.substr(cut)});
    EXPECT_EQ(s.reasoning, reasoning) << "cut at " << cut << " of " << text;
    EXPECT_EQ(s.content, content) << "cut at " << cut << " of " << text;
  }
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  const Split s = read(format, opened, bytes);
  EXPECT_EQ(s.reasoning, reasoning) << text;
  EXPECT_EQ(s.content, content) << text;
}

TEST(ReasoningReader, ThoughtsAtTheStartAreReasoningTrimmed) {
  expect_any_split(ReasoningFormat::kDeepseek, false,
                   "<think>\nFirst, 2 + 2.\n\nIt is 4.\n</think>\n\nThe answer is 4.",
                   "First, 2 + 2.\n\nIt is 4.", "The answer is 4.");
  expect_any_split(ReasoningFormat::kDeepseek, false, "  <think>a</think>b", "a", "b");
}

TEST(ReasoningReader, TextWithoutThoughtsIsContent) {
  expect_any_split(ReasoningFormat::kDeepseek, false, "Hello <think>not here</think>", "",
                   "Hello <think>not here</think>");
  expect_any_split(ReasoningFormat::kDeepseek, false, "<thin", "", "<thin");
  expect_any_split(ReasoningFormat::kDeepseek, false, "<b>bold</b>", "", "<b>bold</b>");
  expect_any_split(ReasoningFormat::kDeepseek, false, "", "", "");
}

TEST(ReasoningReader, APromptThatOpenedThoughtsStartsInThem) {
  expect_any_split(ReasoningFormat::kDeepseek, true, "Let me see.\n</think>\n\n42", "Let me see.",
                   "42");
  // Cut short by max_tokens: unclosed thoughts stay reasoning, a partial tag included.
  expect_any_split(ReasoningFormat::kDeepseek, true, "still thinking </thi", "still thinking </thi",
                   "");
  expect_any_split(ReasoningFormat::kDeepseek, false, "<think>x < y", "x < y", "");
}

TEST(ReasoningReader, NoneKeepsEverythingAsContentLegacyKeepsTheTags) {
  const std::string reply = "<think>hmm</think>yes";
  expect_any_split(ReasoningFormat::kNone, false, reply, "", reply);
  expect_any_split(ReasoningFormat::kDeepseekLegacy, false, reply, "hmm", reply);
}

TEST(ReasoningReader, PromptOpensReasoning) {
  EXPECT_TRUE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n"));
  EXPECT_TRUE(prompt_opens_reasoning("<｜Assistant｜><think>"));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n"));
}

TEST(ReasoningReader, FormatNames) {
  EXPECT_EQ(parse_reasoning_format("auto"), ReasoningFormat::kDeepseek);
  EXPECT_EQ(parse_reasoning_format("none"), ReasoningFormat::kNone);
  EXPECT_EQ(parse_reasoning_format("deepseek-legacy"), ReasoningFormat::kDeepseekLegacy);
  EXPECT_THROW(parse_reasoning_format("parsed"), std::invalid_argument);
  EXPECT_STREQ(reasoning_format_name(ReasoningFormat::kDeepseek), "deepseek");
}

}  // namespace reasoning_reader_test
}  // namespace kvforge
