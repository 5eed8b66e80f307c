#include "app/stop_strings.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kvforge {
namespace {

// Feeds pieces; returns what was emitted after each, then what finish() gave.
std::vector<std::string> stream(StopStringMatcher& m, const std::vector<std::string>& pieces) {
  std::vector<std::string> out;
  for (const std::string& p : pieces) out.push_back(m.feed(p));
  out.push_back(m.finish());
  return out;
}

using Emits = std::vector<std::string>;

TEST(StopStringMatcherTest, StopSplitAcrossPieces) {
  StopStringMatcher m({"llo"});
  EXPECT_EQ(stream(m, {"Hel", "lo", " world"}), (Emits{"He", "", "", ""}));
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.matched(), 0u);
  EXPECT_EQ(m.text(), "He");
}

TEST(StopStringMatcherTest, NoFalseHoldBackAtEndOfStream) {
  StopStringMatcher m({"llo"});
  EXPECT_EQ(stream(m, {"Hel"}), (Emits{"He", "l"}));
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.text(), "Hel");
}

TEST(StopStringMatcherTest, HoldsBackOnlyWhatCouldStartAStop) {
  StopStringMatcher m({"xyz", "abcd"});
  EXPECT_EQ(stream(m, {"abc", "ab", "cx", "x", "y", "q"}),
            (Emits{"", "abc", "abc", "x", "", "xyq", ""}));
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.text(), "abcabcxxyq");
}

TEST(StopStringMatcherTest, OverlappingPartialMatch) {
  StopStringMatcher m({"aab"});
  // "aaa" holds "aa" (the longest suffix that starts "aab") and releases one "a".
  EXPECT_EQ(stream(m, {"a", "a", "a", "b", "c"}), (Emits{"", "", "a", "", "", ""}));
  EXPECT_EQ(m.text(), "a");
}

TEST(StopStringMatcherTest, EarliestOccurrenceWinsAmongSeveralStops) {
  StopStringMatcher m({"world", "lo"});
  EXPECT_EQ(m.feed("hello world"), "hel");
  EXPECT_EQ(m.matched(), 1u);

  StopStringMatcher split({"END", "\n\n"});
  EXPECT_EQ(stream(split, {"abc\n", "\nEND"}), (Emits{"abc", "", ""}));
  EXPECT_EQ(split.matched(), 1u);
  EXPECT_EQ(split.text(), "abc");

  StopStringMatcher same_place({"ab", "abc"});
  same_place.feed("xabc");
  EXPECT_EQ(same_place.matched(), 0u);  // same position: first listed
}

TEST(StopStringMatcherTest, StopAtTheVeryStart) {
  StopStringMatcher m({"STOP"});
  EXPECT_EQ(stream(m, {"STOP", "more"}), (Emits{"", "", ""}));
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.text(), "");
}

TEST(StopStringMatcherTest, MultiByteStopSplitInsideACharacter) {
  StopStringMatcher m({"\xC3\xA9"});  // "é"
  EXPECT_EQ(stream(m, {"caf\xC3", "\xA9!"}), (Emits{"caf", "", ""}));
  EXPECT_EQ(m.text(), "caf");
}

TEST(StopStringMatcherTest, NoStopsPassesEverythingThrough) {
  StopStringMatcher m({});
  EXPECT_EQ(stream(m, {"a", "bc", ""}), (Emits{"a", "bc", "", ""}));
  EXPECT_EQ(m.text(), "abc");
}

TEST(StopStringMatcherTest, EmptyStopStringIsRejected) {
  EXPECT_THROW(StopStringMatcher({"ok", ""}), std::invalid_argument);
}

}  // namespace
}  // namespace kvforge
