#include "app/server/overflow_responder.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

namespace kvforge::server {
namespace {

using std::chrono::milliseconds;

// A connected pair: [0] the client's end, [1] the server's (handed to the responder).
std::pair<int, int> connection() {
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  return {fds[0], fds[1]};
}

// Everything the server sends until it closes.
std::string read_answer(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

OverflowReply health_or_busy(const OverflowRequest& r) {
  OverflowReply reply;
  if (r.method == "GET" && r.target == "/health") {
    reply.status = 200;
    reply.body = "ok";
  } else {
    reply.body = "busy";
    reply.retry_after = true;
  }
  return reply;
}

TEST(OverflowResponder, AnswersHealthAndRefusesTheRest) {
  OverflowResponder responder(health_or_busy, milliseconds(5000), 16);
  auto [health_client, health_server] = connection();
  auto [api_client, api_server] = connection();
  responder.adopt(health_server);
  responder.adopt(api_server);
  const std::string health = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::string api = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
  ASSERT_EQ(::write(health_client, health.data(), health.size()), ssize_t(health.size()));
  ASSERT_EQ(::write(api_client, api.data(), api.size()), ssize_t(api.size()));
  const std::string h = read_answer(health_client);
  const std::string a = read_answer(api_client);
  EXPECT_EQ(h.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << h;
  EXPECT_NE(h.find("Connection: close\r\n\r\nok"), std::string::npos) << h;
  EXPECT_EQ(a.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << a;
  EXPECT_NE(a.find("Retry-After: 1\r\n"), std::string::npos) << a;
  ::close(health_client);
  ::close(api_client);
}

// A client that sends nothing is answered 503 at its head time, not held.
TEST(OverflowResponder, SilentClientsGet503AtTheirHeadTime) {
  OverflowResponder responder(health_or_busy, milliseconds(200), 16);
  auto [client, server] = connection();
  const auto t0 = std::chrono::steady_clock::now();
  responder.adopt(server);
  const std::string answer = read_answer(client);
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(answer.rfind("HTTP/1.1 503 ", 0), 0u) << answer;
  EXPECT_GE(waited, milliseconds(150));
  ::close(client);
}

// Issue 42: past the cap, a pool of 8 threads waited out each slow client's
// header deadline in turn, and /health queued behind them. Here 2,000 silent
// connections are held at once and a /health behind them is answered as soon
// as it asks (the bound is a generous margin over the milliseconds it takes).
TEST(OverflowResponder, HealthIsAnsweredBehindThousandsOfSilentConnections) {
  OverflowResponder responder(health_or_busy, milliseconds(30000), 4096);
  std::vector<int> silent;
  for (int i = 0; i < 2000; ++i) {
    auto [client, server] = connection();
    responder.adopt(server);
    silent.push_back(client);
  }
  auto [client, server] = connection();
  responder.adopt(server);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string health = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::write(client, health.data(), health.size()), ssize_t(health.size()));
  const std::string answer = read_answer(client);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(2000));
  EXPECT_EQ(answer.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << answer;
  EXPECT_GE(responder.held(), 2000u);  // the /health connection may still be draining
  ::close(client);
  for (int fd : silent) ::close(fd);
}

TEST(OverflowResponder, ConnectionsPastItsBoundAreClosed) {
  OverflowResponder responder(health_or_busy, milliseconds(30000), 2);
  std::vector<int> clients;
  for (int i = 0; i < 3; ++i) {
    auto [client, server] = connection();
    responder.adopt(server);
    clients.push_back(client);
  }
  EXPECT_EQ(responder.held(), 2u);
  EXPECT_EQ(read_answer(clients[2]), "");  // closed at once, unanswered
  for (int fd : clients) ::close(fd);
}

}  // namespace
}  // namespace kvforge::server
