// DeadlineStream (the server's per-connection stream, deadline_stream.h) on a
// socket pair: reads stop at the deadline however steadily bytes trickle in,
// and after the byte limit; writes are whole. ReadDeadlines::body scales with
// the declared length, never below the header timeout.
#include "app/server/deadline_stream.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "app/server/deadline_server.h"

namespace kvforge::server {
namespace {

using std::chrono::milliseconds;
using Clock = DeadlineStream::Clock;

struct SocketPair {
  int fds[2] = {-1, -1};
  SocketPair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0); }
  ~SocketPair() {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  }
};

TEST(DeadlineStreamTest, ATrickleOfBytesStopsAtTheDeadline) {
  SocketPair p;
  std::atomic<bool> done{false};
  std::thread trickle([&] {  // a byte every 20 ms: each read waits far less than its timeout
    while (!done) {
      (void)!::write(p.fds[1], "x", 1);
      std::this_thread::sleep_for(milliseconds(20));
    }
  });
  DeadlineStream s(p.fds[0], milliseconds(5000), milliseconds(5000));
  const auto start = Clock::now();
  s.limit_reads(start + milliseconds(300), SIZE_MAX);
  char c;
  size_t got = 0;
  while (s.read(&c, 1) == 1) ++got;
  const auto took = Clock::now() - start;
  done = true;
  trickle.join();
  EXPECT_EQ(s.stop(), DeadlineStream::Stop::kDeadline);
  EXPECT_GT(got, 3u);
  EXPECT_GE(took, milliseconds(290));
  EXPECT_LT(took, milliseconds(1500));
  // The next part of the request gets a new limit.
  s.limit_reads(Clock::now() + milliseconds(1000), SIZE_MAX);
  EXPECT_EQ(s.stop(), DeadlineStream::Stop::kNone);
}

TEST(DeadlineStreamTest, ReadsStopAfterTheByteLimit) {
  SocketPair p;
  ASSERT_EQ(::write(p.fds[1], "0123456789abcdef", 16), 16);
  DeadlineStream s(p.fds[0], milliseconds(1000), milliseconds(1000));
  s.limit_reads(Clock::now() + milliseconds(1000), 10);
  char buf[16];
  EXPECT_EQ(s.read(buf, sizeof buf), 10);
  EXPECT_EQ(std::string(buf, 10), "0123456789");
  EXPECT_EQ(s.read(buf, sizeof buf), -1);
  EXPECT_EQ(s.stop(), DeadlineStream::Stop::kTooLarge);
}

TEST(DeadlineStreamTest, AWriteLargerThanTheSocketBufferIsWrittenWhole) {
  SocketPair p;
  const std::string data(4 << 20, 'w');
  size_t received = 0;
  std::thread reader([&] {
    char buf[65536];
    ssize_t n;
    while ((n = ::read(p.fds[1], buf, sizeof buf)) > 0) received += static_cast<size_t>(n);
  });
  DeadlineStream s(p.fds[0], milliseconds(1000), milliseconds(5000));
  EXPECT_EQ(s.write(data.data(), data.size()), static_cast<ssize_t>(data.size()));
  EXPECT_EQ(s.bytes_written(), data.size());
  ::shutdown(p.fds[0], SHUT_WR);
  reader.join();
  EXPECT_EQ(received, data.size());
}

TEST(ReadDeadlinesTest, TheBodyTimeScalesWithItsLengthAboveTheHeaderTimeout) {
  ReadDeadlines d;
  d.header = milliseconds(10'000);
  d.body_at_max = milliseconds(60'000);
  d.max_body_bytes = 8u << 20;
  EXPECT_EQ(d.body(0), milliseconds(10'000));
  EXPECT_EQ(d.body(1000), milliseconds(10'000));
  EXPECT_EQ(d.body(4u << 20), milliseconds(30'000));
  EXPECT_EQ(d.body(8u << 20), milliseconds(60'000));
  EXPECT_EQ(d.body(SIZE_MAX), milliseconds(60'000));
}

}  // namespace
}  // namespace kvforge::server
