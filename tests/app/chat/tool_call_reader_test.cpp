#include "app/chat/tool_call_reader.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tool_call_deltas.h"

namespace kvforge {
namespace tool_reader_test {

using testing::Read;

Read read(ToolCallStyle style, const std::string& text, size_t piece) {
  return testing::read_calls(style, text, piece);
}

TEST(ToolCallReader, HermesCallsByteByByteAndWhole) {
  const std::string text =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"a}\\\"{b\", "
      "\"n\": [1, {\"x\": 2}]} }\n</tool_call>\n<tool_call>\n{\"name\": \"add\", \"arguments\": "
      "{}}\n</tool_call>";
  for (size_t piece : {size_t(1), size_t(3), text.size()}) {
    const Read r = read(ToolCallStyle::kHermes, text, piece);
    ASSERT_TRUE(r.complete) << piece;
    EXPECT_EQ(r.content, "");
    ASSERT_EQ(r.calls.size(), 2u);
    EXPECT_EQ(r.calls[0].name, "get_weather");
    EXPECT_EQ(nlohmann::json::parse(r.calls[0].arguments)["city"], "a}\"{b");
    EXPECT_EQ(r.calls[1].name, "add");
    EXPECT_EQ(r.calls[1].arguments, "{}");
  }
}

TEST(ToolCallReader, GenericAndLlama3Forms) {
  const Read g = read(ToolCallStyle::kGeneric,
                      "{\"tool_calls\": [{\"name\": \"f\", \"arguments\": {\"a\": 1}}, "
                      "{\"name\": \"g\", \"arguments\": {}}]}",
                      2);
  ASSERT_TRUE(g.complete);
  ASSERT_EQ(g.calls.size(), 2u);
  EXPECT_EQ(g.calls[0].arguments, "{\"a\": 1}");
  const Read l =
      read(ToolCallStyle::kLlama3, "{\"name\": \"f\", \"parameters\": {\"a\": \"}\"}}", 1);
  ASSERT_TRUE(l.complete);
  EXPECT_EQ(l.calls[0].arguments, "{\"a\": \"}\"}");
}

TEST(ToolCallReader, TextIsContentAndAPrefixOfTheTriggerIsHeldBack) {
  const Read t = read(ToolCallStyle::kHermes, "<tool_cal but text after all", 1);
  EXPECT_FALSE(t.complete);
  EXPECT_EQ(t.content, "<tool_cal but text after all");
  EXPECT_TRUE(t.calls.empty());
  // The reply ended inside the trigger: it was text.
  const Read p = read(ToolCallStyle::kHermes, "<tool", 1);
  EXPECT_EQ(p.content, "<tool");
  const Read e = read(ToolCallStyle::kGeneric, "", 1);
  EXPECT_EQ(e.content, "");
  EXPECT_FALSE(e.complete);
}

TEST(ToolCallReader, ACutOrMalformedCallIsNotComplete) {
  EXPECT_FALSE(
      read(ToolCallStyle::kHermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\"", 4)
          .complete);
  EXPECT_FALSE(
      read(ToolCallStyle::kHermes, "<tool_call>\n{\"nome\": \"f\"}\n</tool_call>", 4).complete);
  EXPECT_FALSE(read(ToolCallStyle::kLlama3, "{\"name\": \"f\", \"parameters\": 3}", 1).complete);
}

TEST(ToolCallReader, MistralJsonAndArgsForms) {
  const std::string json_form =
      "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"[ARGS]\"}}, "
      "{\"name\": \"add\", \"arguments\": {}}]";
  const std::string args_form =
      "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"[TOOL_CALLS]\"}[TOOL_CALLS]add[ARGS]{}";
  for (size_t piece : {size_t(1), size_t(4), size_t(1000)}) {
    const Read j = read(ToolCallStyle::kMistral, json_form, piece);
    const Read a = read(ToolCallStyle::kMistralArgs, args_form, piece);
    for (const Read& r : {j, a}) {
      ASSERT_TRUE(r.complete) << piece;
      ASSERT_EQ(r.calls.size(), 2u);
      EXPECT_EQ(r.calls[0].name, "get_weather");
      EXPECT_EQ(r.calls[1].name, "add");
      EXPECT_EQ(r.calls[1].arguments, "{}");
      EXPECT_EQ(r.content, "");
    }
    EXPECT_EQ(nlohmann::json::parse(a.calls[0].arguments)["city"], "[TOOL_CALLS]");
  }
  // Text that only starts like the trigger is text.
  EXPECT_EQ(read(ToolCallStyle::kMistralArgs, "[TOOL] time", 2).content, "[TOOL] time");
}

}  // namespace tool_reader_test
}  // namespace kvforge
