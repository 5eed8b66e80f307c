// Gemma4Arguments: Gemma 4's notation of a call's arguments turned into the
// JSON llama-server returns for it, whole and fed in every split.
#include "app/chat/gemma4_arguments.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace kvforge {
namespace gemma4_arguments_test {

using Status = Gemma4Arguments::Status;

// Feeds `text` cut at `cut`, as a stream gives it; the JSON written and the status at the end.
std::pair<std::string, Status> read_cut(const std::string& text, size_t cut) {
  Gemma4Arguments reader;
  std::string json;
  size_t pos = 0;
  Status s = reader.read(std::string_view(text).substr(0, cut), pos, json);
  if (s == Status::kMore) s = reader.read(text, pos, json);
  return {json, s};
}

// Every split of `text` in two and byte by byte gives `expected` and kDone.
void expect_json(const std::string& text, const std::string& expected) {
  ASSERT_EQ(gemma4_arguments_json(text), expected) << text;
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    const auto [json, status] = read_cut(text, cut);
    EXPECT_EQ(status, Status::kDone) << "cut at " << cut << " of " << text;
    EXPECT_EQ(json, expected) << "cut at " << cut << " of " << text;
  }
  Gemma4Arguments reader;
  std::string json;
  size_t pos = 0;
  Status s = Status::kMore;
  for (size_t end = 1; end <= text.size() && s == Status::kMore; ++end)
    s = reader.read(std::string_view(text).substr(0, end), pos, json);
  EXPECT_EQ(s, Status::kDone) << text;
  EXPECT_EQ(json, expected) << text;
}

// The arguments as the template renders them (tests/app/chat/data/gemma-4-tools.txt).
TEST(Gemma4Arguments, TheTemplatesNotationIsJson) {
  expect_json("{city:<|\"|>Paris<|\"|>,unit:<|\"|>c<|\"|>}", R"({"city":"Paris","unit":"c"})");
  expect_json("{}", "{}");
  expect_json("{n:-1.5e3,ok:true,no:false,x:null,z:0}",
              R"({"n":-1.5e3,"ok":true,"no":false,"x":null,"z":0})");
  expect_json("{a:{b:[1,[],{}],c:[<|\"|>x<|\"|>,{d:2}]}}",
              R"({"a":{"b":[1,[],{}],"c":["x",{"d":2}]}})");
}

// A string's raw text (quotes, backslashes, newlines, '<' and '|' that are not
// the mark, UTF-8) is escaped; keys are quoted and escaped too.
TEST(Gemma4Arguments, StringsAndKeysAreEscaped) {
  const std::string text = "{path:<|\"|>C:\\dir \"q\" <|x|> a<b|c\n\tend é<|\"|>,we\"ird key:1}";
  const std::string expected =
      "{\"path\":\"C:\\\\dir \\\"q\\\" <|x|> a<b|c\\n\\tend é\",\"we\\\"ird key\":1}";
  expect_json(text, expected);
  const nlohmann::json parsed = nlohmann::json::parse(expected);
  EXPECT_EQ(parsed["path"], "C:\\dir \"q\" <|x|> a<b|c\n\tend é");
}

// Whitespace outside strings (a model may write some) is dropped, as llama-server drops it.
TEST(Gemma4Arguments, WhitespaceOutsideStringsIsDropped) {
  expect_json("{ a: 1 , b :[ 2 , 3 ] }", R"({"a":1,"b ":[2,3]})");
}

TEST(Gemma4Arguments, MalformedNotationIsRefused) {
  for (const char* bad :
       {"[1]", "<|\"|>x<|\"|>", "{a:bare}", "{a:01}", "{a:1.}", "{a:tru}", "{:1}", "{a:1,}",
        "{a:1]", "{a:[1}", "{a:<|x|>}", "{a{b:1}}", "{a,b:1}", "{a:1}x", "{a:\"json\"}", "{a:1"})
    EXPECT_EQ(gemma4_arguments_json(bad), std::nullopt) << bad;
  std::string deep = "{a:";
  for (size_t i = 0; i < Gemma4Arguments::kMaxDepth; ++i) deep += "[";
  EXPECT_EQ(gemma4_arguments_json(deep + "1"), std::nullopt);
  EXPECT_EQ(gemma4_arguments_json("{a:" + std::string(100, '1') + "}"), std::nullopt);
}

// What a stream has read so far is given out at once, a possible mark held back.
TEST(Gemma4Arguments, StreamsStringsAsTheyCome) {
  Gemma4Arguments reader;
  std::string json;
  size_t pos = 0;
  const std::string text = "{q:<|\"|>hello wor<|";
  EXPECT_EQ(reader.read(text, pos, json), Status::kMore);
  EXPECT_EQ(json, "{\"q\":\"hello wor");
  EXPECT_EQ(pos, text.size() - 2);
  const std::string more = text + "\"|>}<tool_call|>";
  EXPECT_EQ(reader.read(more, pos, json), Status::kDone);
  EXPECT_EQ(json, "{\"q\":\"hello wor\"}");
  EXPECT_EQ(more.substr(pos), "<tool_call|>");
}

}  // namespace gemma4_arguments_test
}  // namespace kvforge
