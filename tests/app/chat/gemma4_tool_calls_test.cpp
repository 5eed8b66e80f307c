// Gemma 4's tool calls and thoughts: its template detected, an OpenAI tool
// exchange folded into the template's `tool_responses` and rendered as
// llama-server renders it, calls read out of a reply as OpenAI tool calls,
// and the thought channel split off as reasoning.
//
// Expected prompts (data/gemma-4-*.txt) are llama-server's /apply-template
// output for the same OpenAI messages (data/README.md); llama.cpp leaves the
// leading <bos> out (it adds the token), so the expectations are "<bos>" + that.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "app/chat/chat_template.h"
#include "app/chat/gemma4_conversation.h"
#include "app/chat/reasoning_reader.h"
#include "app/chat/tool_call_reader.h"
#include "app/chat/tool_call_syntax.h"
#include "chat_fixture.h"
#include "tool_call_deltas.h"

namespace kvforge {
namespace gemma4_tool_calls_test {

using nlohmann::ordered_json;

// Two revisions of the template: the one of llama.cpp's Gemma 4 vocabulary
// (it knows no `tool` role: kvforge folds the exchange into
// `tool_responses`) and the official one (gemma-4-31b-it.jinja, which reads
// OpenAI's `tool` messages itself: the exchange is given as sent). Each
// revision's expected prompts come from llama-server with that template.
struct Revision {
  const char* jinja;
  const char* golden_prefix;  // data/<prefix><conversation>.txt
  ToolTurns turns;
};
constexpr Revision kFirst{"gemma-4-vocab.jinja", "gemma-4-", ToolTurns::kGemma4Folded};
constexpr Revision kOfficial{"gemma-4-31b-it.jinja", "gemma-4-31b-", ToolTurns::kAsSent};

ChatTemplate gemma4_template(const Revision& rev = kFirst) {
  return ChatTemplate::parse(testing::read_chat_fixture(rev.jinja));
}

// The messages and tools as a server request gives them, rendered as
// kvforge serve renders them (thinking on unless `thinking` is false).
std::string render_request(const Revision& rev, const ordered_json& messages,
                           const ordered_json& tools, std::optional<bool> thinking) {
  const ChatTemplate t = gemma4_template(rev);
  EXPECT_EQ(tool_turns_for(t), rev.turns) << rev.jinja;
  const TemplateConversation conv =
      conversation_for_template(detect_tool_call_style(t), tool_turns_for(t), messages, tools);
  ChatTemplateInputs in;
  in.messages = conv.messages;
  in.tools = conv.tools;
  in.bos_token = "<bos>";
  in.eos_token = "<eos>";
  in.extra = {{"enable_thinking", thinking.value_or(true)}};
  std::string text = t.render(in);
  gemma4_open_model_turn(text);
  return text;
}

std::string expected(const Revision& rev, const std::string& conversation) {
  return "<bos>" + testing::read_chat_fixture(rev.golden_prefix + conversation + ".txt");
}

const ordered_json kWeatherTool = ordered_json::parse(R"([{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather of a city",
    "parameters": {"type": "object", "properties": {
      "city": {"type": "string", "description": "The city"},
      "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}}])");

TEST(Gemma4ToolCalls, TheTemplateIsDetected) {
  for (const Revision& rev : {kFirst, kOfficial}) {
    const ChatTemplate t = gemma4_template(rev);
    EXPECT_EQ(detect_tool_call_style(t), ToolCallStyle::kGemma4) << rev.jinja;
    EXPECT_TRUE(is_gemma4_template(t));
    EXPECT_FALSE(is_harmony_template(t));
  }
  EXPECT_STREQ(tool_call_style_name(ToolCallStyle::kGemma4), "gemma4");
}

// The exchange of data/gemma-4-tools.txt as OpenAI sends it: a call (its
// arguments JSON text), the tool's answer, the assistant's reply.
TEST(Gemma4ToolCalls, AnOpenAIExchangeRendersAsLlamaServerRendersIt) {
  const ordered_json messages = ordered_json::parse(R"([
    {"role": "system", "content": "Use tools."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": null, "tool_calls": [{"type": "function", "id": "c1",
      "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"c\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "{\"temp\": 21, \"sky\": \"clear\"}"},
    {"role": "assistant", "content": "It is 21 C and clear."},
    {"role": "user", "content": "Thanks"}])");
  for (const Revision& rev : {kFirst, kOfficial})
    EXPECT_EQ(render_request(rev, messages, kWeatherTool, false), expected(rev, "tools"));
}

// The agent's usual next step: two calls answered (one result JSON, one
// plain text) and the model's turn continued, with thinking on by default.
// The official template passes a JSON-text result on as text.
TEST(Gemma4ToolCalls, ResultsEndTheConversationAndTheModelGoesOn) {
  const ordered_json messages = ordered_json::parse(R"([
    {"role": "user", "content": "Weather in Paris and Rome?"},
    {"role": "assistant", "content": "", "tool_calls": [
      {"type": "function", "id": "a", "function": {"name": "get_weather",
        "arguments": "{\"city\": \"Paris\"}"}},
      {"type": "function", "id": "b", "function": {"name": "get_weather",
        "arguments": "{\"city\": \"Rome\", \"unit\": \"f\"}"}}]},
    {"role": "tool", "tool_call_id": "a", "content": "{\"temp\": 21}"},
    {"role": "tool", "tool_call_id": "b", "content": "sunny, 75 F"}])");
  for (const Revision& rev : {kFirst, kOfficial})
    EXPECT_EQ(render_request(rev, messages, kWeatherTool, std::nullopt), expected(rev, "agent"));
}

// A turn that ends the conversation with its answer, thinking on: the
// template writes no generation prompt, so a model turn is opened.
TEST(Gemma4ToolCalls, AnAnswerLastOpensAModelTurn) {
  const ordered_json messages = ordered_json::parse(R"([
    {"role": "user", "content": "Weather?"},
    {"role": "assistant", "tool_calls": [{"type": "function", "id": "a",
      "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
    {"role": "tool", "tool_call_id": "a", "content": "[1, \"x\"]"},
    {"role": "assistant", "content": "Cold."}])");
  for (const Revision& rev : {kFirst, kOfficial})
    EXPECT_EQ(render_request(rev, messages, kWeatherTool, std::nullopt),
              expected(rev, "answer-last"));
}

TEST(Gemma4ToolCalls, FoldKeepsOtherMessagesAndNamesResultsByPosition) {
  const ordered_json folded = gemma4_fold_tool_turns(ordered_json::parse(R"([
    {"role": "user", "content": "u"},
    {"role": "assistant", "content": "dropped", "reasoning_content": "r", "tool_calls": [
      {"id": "a", "function": {"name": "f", "arguments": {}}}]},
    {"role": "tool", "tool_call_id": "a", "content": "not json"},
    {"role": "tool", "tool_call_id": "extra", "content": {"k": 1}},
    {"role": "user", "content": "next"}])"));
  EXPECT_EQ(folded, ordered_json::parse(R"([
    {"role": "user", "content": "u"},
    {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": {}}}],
     "tool_responses": [{"name": "f", "response": "not json"},
                        {"name": "extra", "response": {"k": 1}}],
     "reasoning_content": "r"},
    {"role": "user", "content": "next"}])"));
}

testing::Read read(const std::string& text, size_t piece) {
  return testing::read_calls(ToolCallStyle::kGemma4, text, piece);
}

TEST(Gemma4ToolCalls, CallsAreReadAsOpenAICallsInEverySplit) {
  const std::string text =
      "<|tool_call>call:get_weather{city:<|\"|>Paris, \"FR\"<|\"|>,days:[1,2]}<tool_call|>"
      "<|tool_call>call:add-2{}<tool_call|>";
  for (size_t piece : {size_t(1), size_t(2), size_t(5), text.size()}) {
    const testing::Read r = read(text, piece);
    ASSERT_TRUE(r.complete) << piece;
    EXPECT_EQ(r.content, "");
    ASSERT_EQ(r.calls.size(), 2u);
    EXPECT_EQ(r.calls[0].name, "get_weather");
    EXPECT_EQ(r.calls[0].arguments, R"({"city":"Paris, \"FR\"","days":[1,2]})");
    EXPECT_EQ(r.calls[1].name, "add-2");
    EXPECT_EQ(r.calls[1].arguments, "{}");
  }
}

TEST(Gemma4ToolCalls, TextAndMalformedCalls) {
  const testing::Read text = read("Hello <|tool_call> later is text", 1);
  EXPECT_EQ(text.content, "Hello <|tool_call> later is text");
  EXPECT_TRUE(text.calls.empty());
  EXPECT_EQ(read("<|tool_c", 1).content, "<|tool_c");  // ended inside the trigger: text
  // A bare word is not a value; a call cut short is not whole: neither is complete.
  EXPECT_FALSE(read("<|tool_call>call:f{a:bare}<tool_call|>", 1).complete);
  EXPECT_FALSE(read("<|tool_call>call:f{a:1}", 3).complete);
}

// Thinking on, the reply opens with its thought channel: reasoning, then the answer.
TEST(Gemma4ToolCalls, TheThoughtChannelIsReasoning) {
  const std::string reply = "<|channel>thought\nThe user wants Paris.\n<channel|>Sunny.";
  std::vector<std::string> pieces;
  for (char c : reply) pieces.emplace_back(1, c);
  for (const std::vector<std::string>& cut : {std::vector<std::string>{reply}, pieces}) {
    ReasoningReader r(ReasoningFormat::kDeepseek, false, kGemma4Thought);
    ReasoningDelta all;
    for (const std::string& p : cut) {
      const ReasoningDelta d = r.feed(p);
      all.reasoning += d.reasoning;
      all.content += d.content;
    }
    const ReasoningDelta d = r.finish();
    EXPECT_EQ(all.reasoning + d.reasoning, "The user wants Paris.");
    EXPECT_EQ(all.content + d.content, "Sunny.");
  }
  EXPECT_FALSE(
      prompt_opens_reasoning("<|turn>model\n<|channel>thought\n<channel|>", kGemma4Thought));
}

}  // namespace gemma4_tool_calls_test
}  // namespace kvforge
