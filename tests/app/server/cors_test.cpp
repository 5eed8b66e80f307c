// CORS headers and preflight answers (`serve --cors-origin`).
#include "app/server/cors.h"

#include <gtest/gtest.h>

namespace kvforge::server {
namespace {

httplib::Request request(const std::string& method) {
  httplib::Request r;
  r.method = method;
  r.path = "/v1/chat/completions";
  return r;
}

TEST(Cors, NoOriginAddsNothingAndAnswersNothing) {
  const CorsPolicy none("");
  httplib::Response res;
  EXPECT_FALSE(none.apply(request("OPTIONS"), res));
  EXPECT_TRUE(res.headers.empty());
  EXPECT_EQ(res.status, -1);
}

TEST(Cors, EveryAnswerCarriesTheOrigin) {
  const CorsPolicy cors("https://app.example");
  httplib::Response res;
  EXPECT_FALSE(cors.apply(request("POST"), res));
  EXPECT_EQ(res.get_header_value("Access-Control-Allow-Origin"), "https://app.example");
  EXPECT_EQ(res.get_header_value("Vary"), "Origin");
  EXPECT_FALSE(res.has_header("Access-Control-Allow-Methods"));
  EXPECT_EQ(res.status, -1);  // routing goes on
}

TEST(Cors, PreflightIsAnswered204WithWhatItAsked) {
  const CorsPolicy any("*");
  httplib::Request req = request("OPTIONS");
  req.set_header("Access-Control-Request-Headers", "authorization, x-api-key");
  httplib::Response res;
  EXPECT_TRUE(any.apply(req, res));
  EXPECT_EQ(res.status, 204);
  EXPECT_EQ(res.get_header_value("Access-Control-Allow-Origin"), "*");
  EXPECT_FALSE(res.has_header("Vary"));
  EXPECT_EQ(res.get_header_value("Access-Control-Allow-Headers"), "authorization, x-api-key");
  EXPECT_NE(res.get_header_value("Access-Control-Allow-Methods").find("POST"), std::string::npos);

  httplib::Response plain;
  EXPECT_TRUE(any.apply(request("OPTIONS"), plain));
  EXPECT_NE(plain.get_header_value("Access-Control-Allow-Headers").find("Authorization"),
            std::string::npos);
}

}  // namespace
}  // namespace kvforge::server
