// peer_closed() (the server's disconnect detector for non-streaming
// requests) on a real loopback TCP connection: a pipelined byte is "still
// there" and is not consumed; the peer's close is noticed.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "app/server/connection_watch.h"

namespace kvforge::server {
namespace {

int port_of(int fd, bool peer) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  const int rc = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len)
                      : getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  EXPECT_EQ(rc, 0);
  return ntohs(a.sin_port);
}

// A connected pair over 127.0.0.1: `client` and the server side `accepted`.
struct LoopbackPair {
  int listener = -1, client = -1, accepted = -1;
  LoopbackPair() {
    listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(listen(listener, 1), 0);
    a.sin_port = htons(uint16_t(port_of(listener, false)));
    client = socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_EQ(connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    accepted = accept(listener, nullptr, nullptr);
    EXPECT_GE(accepted, 0);
  }
  ~LoopbackPair() {
    for (int fd : {listener, client, accepted})
      if (fd >= 0) close(fd);
  }
};

// peer_closed() after the kernel has had a moment to deliver what the peer did.
bool settled_peer_closed(int fd, bool expected) {
  for (int i = 0; i < 100; ++i) {
    if (peer_closed(fd) == expected) return expected;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return !expected;
}

TEST(ConnectionWatchServerTest, NoticesThePeerClosingButNotAPipelinedByte) {
  LoopbackPair p;
  EXPECT_FALSE(peer_closed(p.accepted));

  ASSERT_EQ(send(p.client, "G", 1, 0), 1);  // a pipelined next request is no disconnect
  EXPECT_FALSE(settled_peer_closed(p.accepted, false));
  char c = 0;
  ASSERT_EQ(recv(p.accepted, &c, 1, 0), 1) << "the peek must not consume";
  EXPECT_EQ(c, 'G');

  close(p.client);
  p.client = -1;
  EXPECT_TRUE(settled_peer_closed(p.accepted, true));
}

TEST(ConnectionWatchServerTest, NoSocketIsNeverClosed) { EXPECT_FALSE(peer_closed(-1)); }

}  // namespace
}  // namespace kvforge::server
