// Which "model" names a request may use, and the /v1/models answers.
#include "app/server/model_names.h"

#include <gtest/gtest.h>

namespace kvforge::server {
namespace {

RequestLimits two_aliases() {
  RequestLimits l;
  l.model_ids = {"gpt-4o-mini", "local", "kvforge-kjv-4m"};  // two --alias ids, then the file stem
  l.listed_models = 2;
  return l;
}

TEST(ModelNames, EveryIdIsServedAndOnlyTheAliasesAreListed) {
  const RequestLimits l = two_aliases();
  for (const char* id : {"gpt-4o-mini", "local", "kvforge-kjv-4m"})
    EXPECT_TRUE(serves_model(l, id));
  EXPECT_FALSE(serves_model(l, "gpt-4"));
  const nlohmann::json list = list_models(l, 7);
  ASSERT_EQ(list["data"].size(), 2u);
  EXPECT_EQ(list["data"][0]["id"], "gpt-4o-mini");
  EXPECT_EQ(list["data"][1]["id"], "local");
  EXPECT_EQ(list["object"], "list");
}

TEST(ModelNames, ModelInfoOrNotFound) {
  const RequestLimits l = two_aliases();
  const nlohmann::json m = model_info(l, "kvforge-kjv-4m", 7);
  EXPECT_EQ(m["id"], "kvforge-kjv-4m");
  EXPECT_EQ(m["object"], "model");
  EXPECT_EQ(m["created"], 7);
  try {
    model_info(l, "gpt-4", 7);
    FAIL() << "gpt-4 found";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 404);
    const nlohmann::json j = e.to_json();
    EXPECT_EQ(j["error"]["code"], "model_not_found");
    EXPECT_EQ(j["error"]["param"], "model");
    EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  }
}

TEST(ModelNames, AnyModelNameServesEveryName) {
  RequestLimits l = two_aliases();
  l.any_model_name = true;
  EXPECT_TRUE(serves_model(l, "gpt-4"));
  EXPECT_EQ(model_info(l, "claude-x", 1)["id"], "claude-x");
  EXPECT_EQ(list_models(l, 1)["data"].size(), 2u);  // the listing stays the aliases
}

}  // namespace
}  // namespace kvforge::server
