// kvforge bench's bytes per decoded token (app/bench/bench_cost.h) against
// the file's tensor table: everything whole but the embeddings (one row per
// token, Gemma 4's per-layer table too), RoPE frequency factors (made into
// tables at load) and, in a mixture of experts, the experts (k of n, biases
// included) — the active bytes `kvforge info` reports, less the embedding
// rows a token does not read.
#include "app/bench/bench_cost.h"

#include <gtest/gtest.h>

#include <string>

#include "core/gguf/gguf_file.h"
#include "model/random_model.h"
#include "test_models.h"

namespace kvforge::cli {
namespace {

struct Counted {
  double weight_bytes = 0;  // what a token reads, from the tensor table
  double expert_bytes = 0;  // all experts' bytes
};

Counted count_from_table(const gguf::GgufFile& f, int n_expert, int n_used) {
  Counted c;
  for (const gguf::TensorInfo& t : f.tensors()) {
    const double bytes = double(t.n_bytes);
    if (t.name == "rope_freqs.weight") continue;  // in the RoPE tables made at load
    if (t.name == "token_embd.weight" || t.name == "per_layer_token_embd.weight") {
      c.weight_bytes += bytes / double(t.dims[1]);
    } else if (t.name.find("_exps.") != std::string::npos) {
      c.weight_bytes += bytes * n_used / n_expert;
      c.expert_bytes += bytes;
    } else {
      c.weight_bytes += bytes;
    }
  }
  return c;
}

// The cost model's bytes per token equal the table's count; the sums differ
// only in rounding (doubles, relative 1e-12).
void expect_active_bytes(RandomModelSpec spec, bool moe) {
  const std::vector<uint8_t> bytes = make_random_model(spec).to_bytes();
  const gguf::GgufFile file = gguf::GgufFile::from_bytes(bytes, spec.arch);
  const std::unique_ptr<Model> model =
      Model::from_file(gguf::GgufFile::from_bytes(bytes, spec.arch));
  const CostModel cost(*model, KvFormat{});
  const Counted want = count_from_table(file, spec.n_expert, spec.n_expert_used);
  EXPECT_NEAR(cost.weight_bytes_per_token, want.weight_bytes, 1e-12 * want.weight_bytes)
      << spec.arch;
  // The experts are most of the file, so counting them whole could not pass.
  if (moe) {
    EXPECT_GT(want.expert_bytes, 2 * want.weight_bytes) << spec.arch;
  }
}

RandomModelSpec moe_spec(const char* arch) {
  RandomModelSpec s;
  s.arch = arch;
  s.weight_type = GgmlType::Q8_0;
  s.n_expert = 16;
  s.n_expert_used = 2;
  s.n_ff_exp = 64;
  return s;
}

TEST(BenchCost, MixtureOfExpertsCountsTheExpertsATokenRuns) {
  expect_active_bytes(moe_spec("qwen3moe"), true);
  expect_active_bytes(moe_spec("gpt-oss"), true);  // router and expert biases, sinks
}

TEST(BenchCost, DenseModelCountsEveryWeight) {
  RandomModelSpec s;
  s.weight_type = GgmlType::Q4_0;
  expect_active_bytes(s, false);
}

// Gemma 4: the per-layer embeddings (one row of their table) and output
// scales, and with the double-wide FFN the shared-KV layers' 256 rows
// beside the others' 128, as the file stores them.
TEST(BenchCost, Gemma4CountsPerLayerEmbeddingsAndEachLayersFfnRows) {
  RandomModelSpec s = testing::gemma4_test_spec(3, 8);
  s.n_embd_per_layer = 32;  // whole Q8_0 blocks
  s.weight_type = GgmlType::Q8_0;
  expect_active_bytes(s, false);
  s.double_wide_ffn = true;
  s.weight_type = GgmlType::Q8_0;
  expect_active_bytes(s, false);
}

}  // namespace
}  // namespace kvforge::cli
