// The paged engine's greedy traces of a batch (also kv_quant_modes_test.cpp),
// and against each sequence run alone, for the models whose layers differ in
// K/V shape (per_layer_head_sizes_test.cpp): prompts
// batched and prefilled in chunks beside decodes must give the bits of
// SequenceRunner's contiguous cache.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine_test_util.h"
#include "static_pipeline/static_test_util.h"

namespace kvforge::testing {

// The greedy traces of `prompts` batched in the paged engine, prompts
// prefilled in chunks of `max_batched_tokens` beside the decodes; every block
// is free again at the end.
inline std::map<size_t, Trace> paged_greedy(const Model& model,
                                            const std::vector<std::vector<int32_t>>& prompts,
                                            int max_tokens, KvFormat kv, int32_t block_size,
                                            int max_batched_tokens) {
  ThreadPool pool(2);
  EngineRecorder rec;
  EngineOptions o;
  o.block_size = block_size;
  o.kv_blocks = 1024 / block_size;
  o.kv_format = kv;
  o.n_ctx = 64;
  o.max_batched_tokens = max_batched_tokens;
  Engine e(model, pool, rec.hook(o));
  std::map<size_t, RequestId> ids;
  for (size_t i = 0; i < prompts.size(); ++i)
    ids[i] = e.add_request(prompts[i], greedy(max_tokens));
  while (e.has_unfinished()) rec.record(e.step());
  EXPECT_EQ(e.stats().kv_blocks_free, e.n_blocks());
  std::map<size_t, Trace> out;
  for (const auto& [i, id] : ids) out[i] = rec.at(id, 0);
  return out;
}

// Prompts past the window (8) and across blocks, 12 greedy steps each, in
// the paged engine at block sizes 4 and 16: each sequence's tokens and
// logits bits are those of it run alone.
inline void expect_paged_equals_alone(const Model& model, KvFormat kv) {
  const std::vector<int32_t> lengths = {3, 11, 21};
  const int max_tokens = 12;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<GreedyTrace> alone;
  for (int32_t len : lengths) {
    prompts.push_back(test_prompt(size_t(len), len));
    alone.push_back(dynamic_greedy(model, prompts.back(), max_tokens - 1, 2, kv));
  }
  for (int32_t block_size : {4, 16}) {
    SCOPED_TRACE("block size " + std::to_string(block_size));
    const auto paged = paged_greedy(model, prompts, max_tokens, kv, block_size, 7);
    for (size_t i = 0; i < prompts.size(); ++i) {
      const Trace& p = paged.at(i);
      ASSERT_EQ(p.tokens, alone[i].tokens) << "prompt " << lengths[i];
      for (size_t s = 0; s < p.logits.size(); ++s)
        ASSERT_TRUE(same_bits(p.logits[s], alone[i].logits[s]))
            << "prompt " << lengths[i] << ", step " << s;
    }
  }
}

}  // namespace kvforge::testing
