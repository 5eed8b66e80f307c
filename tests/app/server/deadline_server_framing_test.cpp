// A DeadlineServer fed raw bytes over a socket pair: each badly framed request
// is answered once and the connection closed, whatever follows it (issue 42's
// request desync: the rest of a refused request was served as new requests).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "app/server/deadline_server.h"

namespace kvforge::server {
namespace {

// Everything `server` answers to `bytes` sent at once on a fresh connection,
// the client's side then closed for writing.
std::string served_answer(DeadlineServer& server, const std::string& bytes) {
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  std::thread serve([&] { server.serve_accepted(fds[1]); });
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::write(fds[0], bytes.data() + sent, bytes.size() - sent);
    if (n <= 0) break;  // the server closed: the rest is never read
    sent += static_cast<size_t>(n);
  }
  ::shutdown(fds[0], SHUT_WR);
  std::string answer;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) answer.append(buf, static_cast<size_t>(n));
  serve.join();
  ::close(fds[0]);
  return answer;
}

// The status lines of served_answer().
std::vector<std::string> status_lines(DeadlineServer& server, const std::string& bytes) {
  const std::string answer = served_answer(server, bytes);
  std::vector<std::string> lines;
  const std::regex status_line("HTTP/1\\.1 \\d\\d\\d");
  for (auto it = std::sregex_iterator(answer.begin(), answer.end(), status_line);
       it != std::sregex_iterator(); ++it)
    lines.push_back(it->str());
  return lines;
}

class DeadlineServerFraming : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("models", "text/plain");
    });
    server_.Post("/v1/completions", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content("body:" + req.body, "text/plain");
    });
    server_.Get("/health", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok", "text/plain");
    });
    // serve_accepted() keeps a connection alive only while the server listens.
    ASSERT_GT(server_.bind_to_any_port("127.0.0.1"), 0);
  }
  void TearDown() override { server_.stop(); }

  DeadlineServer server_{ReadDeadlines{}};
};

const std::string kInner = "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n";

std::string post_with(const std::string& fields, const std::string& body) {
  return "POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + fields + "\r\n" + body;
}

TEST_F(DeadlineServerFraming, WellFramedRequestsAreServedInTurn) {
  const auto lines = status_lines(server_, post_with("Content-Length: 2\r\n", "{}") + kInner +
                                               "GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(lines, (std::vector<std::string>{"HTTP/1.1 200", "HTTP/1.1 200", "HTTP/1.1 200"}));
}

TEST_F(DeadlineServerFraming, AnOverlongHeaderLineIsOne400AndTheEnd) {
  const std::string smuggled =
      post_with("X-Long: " + std::string(9000, 'a') + "\r\n" +
                    "Content-Length: " + std::to_string(kInner.size()) + "\r\n",
                kInner);
  EXPECT_EQ(status_lines(server_, smuggled), std::vector<std::string>{"HTTP/1.1 400"});
}

TEST_F(DeadlineServerFraming, AmbiguousLengthsAreOne400AndTheEnd) {
  const std::string n = std::to_string(kInner.size());
  for (const std::string& fields : std::vector<std::string>{
           "Content-Length: " + n + "\r\nContent-Length: 0\r\n", "Content-Length: +" + n + "\r\n",
           "Content-Length: " + n + ", 0\r\n", "Content-Length: 0x1e\r\n",
           "Content-Length : " + n + "\r\n",
           "Transfer-Encoding: chunked\r\nContent-Length: " + n + "\r\n"})
    EXPECT_EQ(status_lines(server_, post_with(fields, kInner) + kInner),
              std::vector<std::string>{"HTTP/1.1 400"})
        << fields;
  EXPECT_EQ(status_lines(server_,
                         post_with("Transfer-Encoding: xchunked\r\nContent-Length: 0\r\n", kInner)),
            std::vector<std::string>{"HTTP/1.1 400"});
  EXPECT_EQ(status_lines(server_, post_with("Transfer-Encoding: gzip\r\n", kInner)),
            std::vector<std::string>{"HTTP/1.1 501"});
}

TEST_F(DeadlineServerFraming, AVersionlessRequestLineGetsOneAnswer) {
  EXPECT_EQ(status_lines(server_, "GET /health\r\n\r\n"), std::vector<std::string>{"HTTP/1.1 400"});
}

// httplib refuses a method it does not know after reading only the request line: the
// rest of that head is not a request (found by fuzz_http_request).
TEST_F(DeadlineServerFraming, AnUnknownMethodEndsTheConnection) {
  EXPECT_EQ(status_lines(server_, "POS /x HTTP/1.1\r\nHost: a\r\n\r\n" + kInner),
            std::vector<std::string>{"HTTP/1.1 400"});
}

TEST_F(DeadlineServerFraming, GzipBodiesAre415) {
  EXPECT_EQ(
      status_lines(server_, post_with("Content-Encoding: gzip\r\nContent-Length: 2\r\n", "{}")),
      std::vector<std::string>{"HTTP/1.1 415"});
}

// cpp-httplib alone read a chunk size of "zz" as 0, a last chunk: the rest was a new request.
TEST_F(DeadlineServerFraming, ChunkSizesAreReadStrictly) {
  for (const std::string& body :
       std::vector<std::string>{"zz\r\n{}\r\n0\r\n\r\n", "0x2\r\n{}\r\n0\r\n\r\n",
                                "2\r\n{}x\r\n0\r\n\r\n", "2\n{}\n0\n\n", "-2\r\n{}\r\n0\r\n\r\n",
                                "1234567890abcdef0\r\n", "2\r\n{}\r\n0\r\nnot a field\r\n\r\n"})
    EXPECT_EQ(status_lines(server_, post_with("Transfer-Encoding: chunked\r\n", body) + kInner),
              std::vector<std::string>{"HTTP/1.1 400"})
        << body;
}

TEST_F(DeadlineServerFraming, ChunkedBodiesAreDecoded) {
  const std::string answer =
      served_answer(server_, post_with("Transfer-Encoding: chunked\r\n",
                                       "3;ext=1\r\nabc\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n") +
                                 kInner);
  EXPECT_NE(answer.find("body:abc0123456789"), std::string::npos) << answer;
  EXPECT_NE(answer.find("models"), std::string::npos) << answer;  // the next request, in turn
}

// A POST without a length has no body (RFC 9112 §6.3): what follows is the next request.
TEST_F(DeadlineServerFraming, APostWithoutALengthHasNoBody) {
  EXPECT_EQ(status_lines(server_, post_with("", "") + kInner),
            (std::vector<std::string>{"HTTP/1.1 200", "HTTP/1.1 200"}));
}

// What is answered before httplib sees the request knows its target once the
// request line arrived (the server shapes the error for the route's API family).
TEST_F(DeadlineServerFraming, AnAnswerWrittenHereKnowsTheRequestTarget) {
  server_.set_stopped_answer([](httplib::Response& res, const std::string&) {
    res.set_content("target:" + DeadlineServer::current_target() + ";", "text/plain");
  });
  const std::string chunked = served_answer(
      server_,
      "POST /api/chat?x=1 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
  EXPECT_NE(chunked.find("HTTP/1.1 400"), std::string::npos) << chunked;
  EXPECT_NE(chunked.find("target:/api/chat?x=1;"), std::string::npos) << chunked;
  const std::string twice = served_answer(
      server_, "POST /v1/messages HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}");
  EXPECT_NE(twice.find("target:/v1/messages;"), std::string::npos) << twice;
  // A head past the header limit: no request line was taken, so no target.
  const std::string huge =
      served_answer(server_, "GET /api/tags HTTP/1.1\r\nX: " + std::string(70 << 10, 'a'));
  EXPECT_NE(huge.find("HTTP/1.1 431"), std::string::npos) << huge.substr(0, 200);
  EXPECT_NE(huge.find("target:;"), std::string::npos) << huge.substr(0, 200);
}

}  // namespace
}  // namespace kvforge::server
