// kvforge serve's access-log line (app/server/access_log.h), text and JSON.
#include "app/server/access_log.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace kvforge::server {
namespace {

AccessRecord chat_record() {
  AccessRecord r;
  r.remote = "127.0.0.1";
  r.method = "POST";
  r.path = "/v1/chat/completions";
  r.status = 200;
  r.trace.prompt_tokens = 12;
  r.trace.completion_tokens = 34;
  r.trace.first_token_seconds = 0.00512;
  r.total_seconds = 0.081;
  return r;
}

TEST(AccessLog, TextLineNamesEveryFigure) {
  EXPECT_EQ(format_access_line(chat_record(), LogFormat::kText),
            "127.0.0.1 \"POST /v1/chat/completions\" 200 prompt=12 gen=34 ttft=5.1ms total=81.0ms");
  AccessRecord plain = chat_record();
  plain.trace = RequestTrace{};
  plain.status = 404;
  EXPECT_EQ(format_access_line(plain, LogFormat::kText),
            "127.0.0.1 \"POST /v1/chat/completions\" 404 total=81.0ms");
}

TEST(AccessLog, JsonLineIsOneObject) {
  const auto j = nlohmann::json::parse(format_access_line(chat_record(), LogFormat::kJson));
  EXPECT_EQ(j["status"], 200);
  EXPECT_EQ(j["prompt_tokens"], 12);
  EXPECT_EQ(j["completion_tokens"], 34);
  EXPECT_DOUBLE_EQ(j["ttft_ms"].get<double>(), 5.1);
  EXPECT_DOUBLE_EQ(j["total_ms"].get<double>(), 81.0);
  AccessRecord plain = chat_record();
  plain.trace.first_token_seconds.reset();
  EXPECT_TRUE(
      nlohmann::json::parse(format_access_line(plain, LogFormat::kJson))["ttft_ms"].is_null());
}

TEST(AccessLog, FormatNames) {
  EXPECT_EQ(parse_log_format("json"), LogFormat::kJson);
  EXPECT_EQ(parse_log_format("text"), LogFormat::kText);
  EXPECT_THROW(parse_log_format("xml"), std::invalid_argument);
}

}  // namespace
}  // namespace kvforge::server
