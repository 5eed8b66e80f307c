// BlockManager::forget_prefix (llama-server's slot erase): the prefix-cache
// entries of a prompt's whole blocks go, except those of blocks a sequence
// holds, and the blocks stay free; a later prompt of those tokens is no hit.
#include <gtest/gtest.h>

#include <vector>

#include "engine/kv/block_manager.h"

namespace kvforge {
namespace {

std::vector<int32_t> forget_tokens(int n) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back(500 + i);
  return t;
}

TEST(BlockManagerForgetTest, DropsTheUnheldBlocksOfAPrefix) {
  BlockManager m(8, 4, /*enable_prefix_cache=*/true);
  const std::vector<int32_t> tokens = forget_tokens(13);
  m.allocate(1, tokens, 13);
  m.mark_computed(1, tokens, 13);  // three whole blocks registered
  m.free(1);
  ASSERT_EQ(m.cached_prefix(tokens), 12);
  const int32_t free_before = m.n_free_blocks();

  // Sequence 2 holds the first block: its entry stays, the two after it go.
  const std::vector<int32_t> head(tokens.begin(), tokens.begin() + 5);
  ASSERT_EQ(m.allocate(2, head, 5), 4);
  EXPECT_EQ(m.forget_prefix(tokens), 8);
  EXPECT_EQ(m.cached_prefix(tokens), 4);
  EXPECT_EQ(m.n_free_blocks(), free_before - 2);  // only sequence 2's two blocks are taken
  EXPECT_EQ(m.forget_prefix(tokens), 0);          // nothing more while it is held

  m.free(2);
  EXPECT_EQ(m.forget_prefix(tokens), 4);
  EXPECT_EQ(m.cached_prefix(tokens), 0);
  EXPECT_EQ(m.n_free_blocks(), 8);
  EXPECT_EQ(m.forget_prefix(forget_tokens(3)), 0);  // less than a block: nothing to match

  // The freed blocks are handed out again like any free block.
  m.allocate(3, tokens, 13);
  EXPECT_EQ(m.n_free_blocks(), 4);
  m.free(3);
}

TEST(BlockManagerForgetTest, WithoutThePrefixCacheThereIsNothingToForget) {
  BlockManager m(4, 4, /*enable_prefix_cache=*/false);
  const std::vector<int32_t> tokens = forget_tokens(9);
  m.allocate(1, tokens, 9);
  m.mark_computed(1, tokens, 9);
  m.free(1);
  EXPECT_EQ(m.forget_prefix(tokens), 0);
  EXPECT_EQ(m.n_free_blocks(), 4);
}

}  // namespace
}  // namespace kvforge
