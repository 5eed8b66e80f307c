// Dropping the oldest turns of a conversation (conversation_trim.h): system
// messages and the last message stay, turns go whole and oldest first, and
// as few as needed.
#include "app/chat/conversation_trim.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kvforge {
namespace {

using Messages = std::vector<nlohmann::ordered_json>;

nlohmann::ordered_json trim_msg(const std::string& role, const std::string& content) {
  return {{"role", role}, {"content", content}};
}

std::string trim_contents(const Messages& m) {
  std::string out;
  for (const auto& x : m) out += x["content"].get<std::string>() + " ";
  return out;
}

// Fits while the messages hold at most `n` characters of content.
auto fits_in(size_t n) {
  return [n](const Messages& m) { return trim_contents(m).size() <= n; };
}

Messages trim_sample() {
  return {trim_msg("system", "S"), trim_msg("user", "u1"),      trim_msg("assistant", "a1"),
          trim_msg("user", "u2"),  trim_msg("assistant", "a2"), trim_msg("tool", "t2"),
          trim_msg("user", "u3"),  trim_msg("assistant", "a3"), trim_msg("user", "u4")};
}

TEST(ConversationTrim, KeepsAConversationThatFits) {
  Messages m = trim_sample();
  const TrimResult r = trim_oldest_turns(m, fits_in(1000));
  EXPECT_TRUE(r.fits);
  EXPECT_EQ(r.messages_dropped, 0);
  EXPECT_EQ(m, trim_sample());
}

TEST(ConversationTrim, DropsTheFewestOldestTurnsWhole) {
  Messages m = trim_sample();
  // Everything is 26 characters; one turn (u1 a1) is 6: dropping it is enough at 20.
  TrimResult r = trim_oldest_turns(m, fits_in(20));
  EXPECT_TRUE(r.fits);
  EXPECT_EQ(r.messages_dropped, 2);
  EXPECT_EQ(trim_contents(m), "S u2 a2 t2 u3 a3 u4 ");
  // The second turn is three messages (the tool result goes with it).
  m = trim_sample();
  r = trim_oldest_turns(m, fits_in(12));
  EXPECT_TRUE(r.fits);
  EXPECT_EQ(r.messages_dropped, 5);
  EXPECT_EQ(trim_contents(m), "S u3 a3 u4 ");
}

TEST(ConversationTrim, NeverDropsTheSystemMessagesOrTheLastMessage) {
  Messages m = trim_sample();
  m.insert(m.begin() + 3, trim_msg("system", "S2"));
  const TrimResult r = trim_oldest_turns(m, fits_in(3));
  EXPECT_FALSE(r.fits);
  EXPECT_EQ(r.messages_dropped, 7);
  EXPECT_EQ(trim_contents(m), "S S2 u4 ");
}

TEST(ConversationTrim, CallsFitsLastOnTheResult) {
  Messages m = trim_sample();
  Messages last_seen;
  trim_oldest_turns(m, [&](const Messages& c) {
    last_seen = c;
    return trim_contents(c).size() <= 20;
  });
  EXPECT_EQ(last_seen, m);
}

}  // namespace
}  // namespace kvforge
