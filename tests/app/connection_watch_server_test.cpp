// ConnectionWatch (the server's disconnect detector for non-streaming
// requests) on a real loopback TCP connection: it finds exactly the accepted
// socket from the 4-tuple, calls a pipelined byte "still there", and notices
// the peer's close.
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
bool settled_peer_closed(const ConnectionWatch& w, bool expected) {
  for (int i = 0; i < 100; ++i) {
    if (w.peer_closed() == expected) return expected;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return !expected;
}

TEST(ConnectionWatchServerTest, FindsTheAcceptedSocketAndNoticesThePeerClosing) {
  LoopbackPair p;
  const int server_port = port_of(p.accepted, false), client_port = port_of(p.accepted, true);
  const auto watch = ConnectionWatch::find("127.0.0.1", server_port, "127.0.0.1", client_port);
  ASSERT_TRUE(watch.has_value()) << "no socket found for the 4-tuple";
  EXPECT_EQ(watch->fd(), p.accepted) << "found the client's end, or another socket";
  EXPECT_FALSE(watch->peer_closed());

  ASSERT_EQ(send(p.client, "G", 1, 0), 1);  // a pipelined next request is no disconnect
  EXPECT_FALSE(settled_peer_closed(*watch, false));
  char c = 0;
  ASSERT_EQ(recv(p.accepted, &c, 1, 0), 1) << "the peek must not consume";
  EXPECT_EQ(c, 'G');

  close(p.client);
  p.client = -1;
  EXPECT_TRUE(settled_peer_closed(*watch, true));
}

TEST(ConnectionWatchServerTest, NoMatchForATupleThatIsNotOpen) {
  LoopbackPair p;
  const int server_port = port_of(p.accepted, false), client_port = port_of(p.accepted, true);
  EXPECT_FALSE(ConnectionWatch::find("127.0.0.1", server_port, "127.0.0.1", client_port + 1));
  EXPECT_FALSE(ConnectionWatch::find("127.0.0.2", server_port, "127.0.0.1", client_port));
  EXPECT_FALSE(ConnectionWatch::find("not an address", server_port, "127.0.0.1", client_port));
  EXPECT_FALSE(ConnectionWatch::find("127.0.0.1", -1, "127.0.0.1", -1));
}

}  // namespace
}  // namespace kvforge::server
