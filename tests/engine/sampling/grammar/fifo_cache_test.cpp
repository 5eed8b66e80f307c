#include "engine/sampling/grammar/fifo_cache.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace kvforge {
namespace {

TEST(FifoCache, DropsTheOldestOneAtATime) {
  FifoCache<int, std::string> c(2);
  c.add(1, "a");
  c.add(2, "b");
  c.add(1, "again");  // the first value stays, and 1 stays the oldest
  ASSERT_NE(c.find(1), nullptr);
  EXPECT_EQ(*c.find(1), "a");
  c.add(3, "c");
  EXPECT_EQ(c.find(1), nullptr);
  ASSERT_NE(c.find(2), nullptr);
  ASSERT_NE(c.find(3), nullptr);
  EXPECT_EQ(c.size(), 2u);
}

TEST(FifoCache, CapacityZeroKeepsNothing) {
  FifoCache<std::vector<uint32_t>, int, std::map<std::vector<uint32_t>, int>> c(0);
  c.add({1, 2}, 7);
  EXPECT_EQ(c.find({1, 2}), nullptr);
  EXPECT_EQ(c.size(), 0u);
}

}  // namespace
}  // namespace kvforge
