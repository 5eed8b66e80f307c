#include "app/server/http_framing.h"

#include <gtest/gtest.h>

#include <string>

namespace kvforge::server {
namespace {

// The status check_request_head() answers a head with; 0 when it passes.
int status_of(const std::string& head) {
  const auto refusal = check_request_head(head);
  return refusal ? refusal->status : 0;
}

std::string message_of(const std::string& head) {
  const auto refusal = check_request_head(head);
  return refusal ? refusal->message : "";
}

const std::string kPost = "POST /v1/completions HTTP/1.1\r\nHost: x\r\n";

TEST(HttpFraming, PlainRequestsPass) {
  EXPECT_EQ(status_of("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
  EXPECT_EQ(status_of(kPost + "Content-Length: 30\r\nContent-Type: application/json\r\n\r\n"), 0);
  EXPECT_EQ(status_of(kPost + "Transfer-Encoding: chunked\r\n\r\n"), 0);
  EXPECT_EQ(status_of(kPost + "transfer-encoding:   Chunked \r\n\r\n"), 0);
  EXPECT_EQ(status_of(kPost + "Content-Encoding: identity\r\nContent-Length: 0\r\n\r\n"), 0);
  EXPECT_EQ(status_of("GET / HTTP/1.0\r\n\r\n"), 0);  // HTTP/1.0 needs no Host
  EXPECT_EQ(status_of(kPost + "Authorization: Bearer k\tk\r\nX-Utf8: caf\xc3\xa9\r\n\r\n"), 0);
}

// Each of the lenient readings found against cpp-httplib 0.11 (issue 42).
TEST(HttpFraming, AmbiguousContentLengthIsRefused) {
  EXPECT_EQ(status_of(kPost + "Content-Length: 30\r\nContent-Length: 5\r\n\r\n"), 400);
  EXPECT_EQ(status_of(kPost + "Content-Length: 5\r\ncontent-length: 5\r\n\r\n"), 400);
  EXPECT_EQ(status_of(kPost + "Content-Length: +30\r\n\r\n"), 400);
  EXPECT_EQ(status_of(kPost + "Content-Length: 30, 5\r\n\r\n"), 400);
  EXPECT_EQ(status_of(kPost + "Content-Length: 0x1e\r\n\r\n"), 400);
  EXPECT_EQ(status_of(kPost + "Content-Length: -1\r\n\r\n"), 400);
  EXPECT_EQ(status_of(kPost + "Content-Length: \r\n\r\n"), 400);
  EXPECT_EQ(status_of(kPost + "Content-Length: 99999999999999999999999\r\n\r\n"), 400);
  EXPECT_NE(message_of(kPost + "Content-Length: +30\r\n\r\n").find("'+30'"), std::string::npos);
}

TEST(HttpFraming, TransferEncodingOtherThanChunkedIsRefused) {
  EXPECT_EQ(status_of(kPost + "Transfer-Encoding: gzip\r\nContent-Length: 5\r\n\r\n"), 400);
  EXPECT_EQ(status_of(kPost + "Transfer-Encoding: gzip\r\n\r\n"), 501);
  EXPECT_EQ(status_of(kPost + "Transfer-Encoding: gzip, chunked\r\n\r\n"), 501);
  EXPECT_EQ(status_of(kPost + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"),
            400);
  EXPECT_EQ(status_of(kPost + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"), 400);
  EXPECT_EQ(status_of("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
}

TEST(HttpFraming, RequestLineWithoutVersionIsRefused) {
  EXPECT_EQ(status_of("GET /health\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET  /health HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET /health HTTP/1.1 x\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET /health HTTP/2.0\r\nHost: x\r\n\r\n"), 505);
  EXPECT_EQ(status_of("GET /he\x01lth HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(status_of("G(T /health HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET /" + std::string(kMaxRequestLineBytes, 'a') + " HTTP/1.1\r\n\r\n"), 414);
}

TEST(HttpFraming, FieldLinesAreStrict) {
  EXPECT_EQ(status_of(kPost + "Content-Length : 5\r\n\r\n"), 400);  // space before the colon
  EXPECT_EQ(status_of(kPost + "X-A: 1\r\n folded\r\n\r\n"), 400);   // obsolete folding
  EXPECT_EQ(status_of(kPost + "no colon here\r\n\r\n"), 400);
  EXPECT_EQ(status_of(kPost + "X-Long: " + std::string(kMaxFieldLineBytes, 'a') + "\r\n\r\n"), 400);
  const std::string nul = kPost + std::string("Authorization: Bearer KEY\0junk\r\n\r\n", 34);
  EXPECT_EQ(status_of(nul), 400);
  EXPECT_NE(message_of(nul).find("Authorization"), std::string::npos);
  EXPECT_EQ(status_of(kPost + "X-A: a\x7f\r\n\r\n"), 400);
}

TEST(HttpFraming, LineEndsMustBeCrlf) {
  EXPECT_EQ(status_of("GET /health HTTP/1.1\nHost: x\n\n"), 400);
  EXPECT_EQ(status_of("GET /health HTTP/1.1\r\nHost: x\n\r\n"), 400);
  EXPECT_EQ(status_of("GET /health HTTP/1.1\r\nHost: x\rX: y\r\n\r\n"), 400);
}

TEST(HttpFraming, HostIsRequiredOnceInHttp11) {
  EXPECT_EQ(status_of("GET /health HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), 400);
}

TEST(HttpFraming, CompressedBodiesAre415) {
  EXPECT_EQ(status_of(kPost + "Content-Encoding: gzip\r\nContent-Length: 5\r\n\r\n"), 415);
  EXPECT_NE(message_of(kPost + "Content-Encoding: br\r\n\r\n").find("'br'"), std::string::npos);
}

TEST(HttpFraming, BodyFramingIsReported) {
  BodyFraming f;
  ASSERT_EQ(check_request_head(kPost + "Content-Length: 42\r\n\r\n", &f), std::nullopt);
  EXPECT_FALSE(f.chunked);
  EXPECT_EQ(f.content_length, 42u);
  ASSERT_EQ(check_request_head(kPost + "Transfer-Encoding: chunked\r\n\r\n", &f), std::nullopt);
  EXPECT_TRUE(f.chunked);
  EXPECT_EQ(f.content_length, std::nullopt);
  ASSERT_EQ(check_request_head("GET / HTTP/1.1\r\nHost: x\r\n\r\n", &f), std::nullopt);
  EXPECT_FALSE(f.chunked);
  EXPECT_EQ(f.content_length, std::nullopt);
}

TEST(HttpFraming, WithContentLengthReplacesTheBodyFields) {
  EXPECT_EQ(with_content_length(kPost + "transfer-encoding: chunked\r\nX-A: 1\r\n\r\n", 5),
            kPost + "X-A: 1\r\nContent-Length: 5\r\n\r\n");
  EXPECT_EQ(with_content_length("GET / HTTP/1.1\r\nHost: x\r\n\r\n", 0),
            "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
}

}  // namespace
}  // namespace kvforge::server
