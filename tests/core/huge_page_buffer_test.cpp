#include "core/huge_page_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>

namespace kvforge {
namespace {

constexpr size_t kHugePage = size_t(2) << 20;

TEST(HugePageBuffer, EmptyByDefaultAndForZeroBytes) {
  HugePageBuffer none;
  EXPECT_EQ(none.data(), nullptr);
  EXPECT_EQ(none.size(), 0u);
  HugePageBuffer zero(0);
  EXPECT_EQ(zero.data(), nullptr);
  EXPECT_EQ(zero.size(), 0u);
}

TEST(HugePageBuffer, ZeroFilledAlignedAndWritableToTheLastByte) {
  // Not a multiple of the huge page: the tail of the last page is mapped too.
  const size_t bytes = 3 * kHugePage + 12345;
  HugePageBuffer b(bytes);
  ASSERT_NE(b.data(), nullptr);
  EXPECT_EQ(b.size(), bytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % kHugePage, 0u);
  uint64_t sum = 0;
  for (size_t i = 0; i < bytes; i += 4096) sum += b.data()[i];
  sum += b.data()[bytes - 1];
  EXPECT_EQ(sum, 0u);
  b.data()[0] = 1;
  b.data()[bytes - 1] = 2;
  EXPECT_EQ(b.data()[0] + b.data()[bytes - 1], 3);
}

TEST(HugePageBuffer, MovesKeepTheBytesInPlace) {
  HugePageBuffer a(1000);
  uint8_t* p = a.data();
  p[999] = 7;
  HugePageBuffer b(std::move(a));
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.size(), 1000u);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty
  HugePageBuffer c(5000);
  c = std::move(b);  // c's own mapping is released
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.data()[999], 7);
  EXPECT_EQ(b.size(), 0u);  // NOLINT(bugprone-use-after-move)
}

}  // namespace
}  // namespace kvforge
