#include "app/server/json_body_parser.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "app/server/openai_error.h"

namespace kvforge::server {
namespace {

using nlohmann::ordered_json;

int status_of_parse(const std::string& text, const JsonBodyChecks& checks = {}) {
  try {
    parse_json_linear(text, checks);
    return 0;
  } catch (const ApiError& e) {
    return e.status();
  }
}

// {"k0":0,"k1":1,...}
std::string object_of(size_t keys, const std::string& prefix = "k") {
  std::string text = "{";
  for (size_t i = 0; i < keys; ++i)
    text += (i ? ",\"" : "\"") + prefix + std::to_string(i) + "\":" + std::to_string(i);
  return text + "}";
}

TEST(JsonBodyParser, BuildsTheSameDocumentAsNlohmann) {
  const std::string text =
      R"({"b":1,"a":[1,-2,3.5,"x",true,false,null,{"z":{},"y":[]}],"c":{"d":"\u00e9"},)"
      R"("big":18446744073709551615,"neg":-9223372036854775808})";
  const ordered_json ours = parse_json_linear(text, {});
  const ordered_json theirs = ordered_json::parse(text);
  EXPECT_EQ(ours, theirs);
  EXPECT_EQ(ours.dump(), theirs.dump());  // key order kept
  EXPECT_EQ(parse_json_linear("[]", {}), ordered_json::array());
  EXPECT_EQ(parse_json_linear("7", {}), ordered_json(7));
}

TEST(JsonBodyParser, InvalidTextThrowsNlohmannErrors) {
  EXPECT_THROW(parse_json_linear("{\"a\":", {}), ordered_json::parse_error);
  EXPECT_THROW(parse_json_linear("{} x", {}), ordered_json::parse_error);
  EXPECT_THROW(parse_json_linear("1e400", {}), ordered_json::exception);
}

TEST(JsonBodyParser, DuplicateKeysAreRefusedAtAnyDepth) {
  EXPECT_EQ(status_of_parse(R"({"a":1,"a":2})"), 400);
  EXPECT_EQ(status_of_parse(R"({"x":{"a":1,"b":{},"a":2}})"), 400);
  EXPECT_EQ(status_of_parse(R"([{"a":1},{"a":2}])"), 0);  // different objects
  try {
    parse_json_linear(R"({"model":"m","model":"n"})", {});
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_NE(std::string(e.what()).find("'model' twice"), std::string::npos) << e.what();
  }
}

TEST(JsonBodyParser, NestingIsBounded) {
  JsonBodyChecks checks;
  checks.max_depth = 3;
  EXPECT_EQ(status_of_parse("[[[1]]]", checks), 0);
  EXPECT_EQ(status_of_parse("[[[[1]]]]", checks), 400);
  EXPECT_EQ(status_of_parse(std::string(100000, '[') + std::string(100000, ']'), {}), 400);
}

TEST(JsonBodyParser, TopLevelKeysAreSeenAsTheyAreRead) {
  JsonBodyChecks checks;
  size_t seen = 0;
  checks.top_level_key = [&](const std::string& key) {
    ++seen;
    if (key == "bad") throw ApiError(400, "bad key");
  };
  EXPECT_EQ(status_of_parse(R"({"a":{"bad":1},"b":2})", checks),
            0);  // nested keys are not top-level
  EXPECT_EQ(seen, 2u);
  seen = 0;
  EXPECT_EQ(status_of_parse(R"({"a":1,"bad":2,"c":3})", checks), 400);
  EXPECT_EQ(seen, 2u);  // stopped at the refused key
}

TEST(JsonBodyParser, ACancelledClientStopsTheParse) {
  JsonBodyChecks checks;
  int asked = 0;
  checks.cancelled = [&] { return ++asked == 2; };
  EXPECT_EQ(status_of_parse(object_of(100000), checks), 499);
  EXPECT_EQ(asked, 2);
}

// Issue 42: 80,000 keys took 6.1 s (quadratic inserts). Counted in comparisons
// this would be a benchmark; a bound of seconds is far above linear (about
// 50 ms here) and far below quadratic, even under sanitizers on a busy machine.
TEST(JsonBodyParser, ManyKeysParseInLinearTime) {
  const std::string text = object_of(200000);
  const auto t0 = std::chrono::steady_clock::now();
  const ordered_json j = parse_json_linear(text, {});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(j.size(), 200000u);
  EXPECT_EQ(j.at("k199999"), 199999);
  EXPECT_LT(seconds, 5.0);
}

}  // namespace
}  // namespace kvforge::server
