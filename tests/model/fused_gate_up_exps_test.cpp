// Expert gate and up matrices stored as one tensor (ffn_gate_up_exps,
// ne = [n_embd, 2·n_ff_exp, n_expert]: each expert's gate rows, then its up
// rows), as newer llama.cpp conversions write qwen35moe and qwen3next. The
// fused file holds the same weights as the split one, so its logits must be
// the split file's bit for bit, and so within the llama.cpp golden's bound.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/formats/row_codec.h"
#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"
#include "golden_logits.h"
#include "model/model.h"
#include "testdata.h"

namespace kvforge {
namespace {
namespace fused_gate_up {  // the unity build joins this file with others

// `src` with every layer's ffn_gate_exps and ffn_up_exps fused into one
// ffn_gate_up_exps; `drop_up` leaves out the up half (a malformed file).
gguf::GgufFile fused(const gguf::GgufFile& src, bool drop_up = false) {
  gguf::GgufWriter out(3, src.alignment());
  for (const gguf::KeyValue& kv : src.metadata()) out.set(kv.key, kv.value);
  for (const gguf::TensorInfo& t : src.tensors()) {
    const std::string& name = t.name;
    if (name.ends_with("ffn_up_exps.weight")) continue;
    const auto data = src.tensor_data(t);
    if (!name.ends_with("ffn_gate_exps.weight")) {
      out.add_tensor(name, t.type, t.dims, std::vector<uint8_t>(data.begin(), data.end()));
      continue;
    }
    const std::string prefix = name.substr(0, name.size() - std::string("gate_exps.weight").size());
    const gguf::TensorInfo* up = src.find_tensor(prefix + "up_exps.weight");
    if (!up || up->type != t.type || up->dims != t.dims)
      throw std::runtime_error(prefix + "up_exps.weight does not match its gate tensor");
    const auto up_data = src.tensor_data(*up);
    const size_t slab = row_bytes(t.type, size_t(t.dims[0])) * size_t(t.dims[1]);
    std::vector<uint8_t> bytes;
    for (uint64_t e = 0; e < t.dims[2]; ++e) {
      bytes.insert(bytes.end(), data.begin() + e * slab, data.begin() + (e + 1) * slab);
      if (!drop_up)
        bytes.insert(bytes.end(), up_data.begin() + e * slab, up_data.begin() + (e + 1) * slab);
    }
    const uint64_t rows = drop_up ? t.dims[1] : 2 * t.dims[1];
    out.add_tensor(prefix + "gate_up_exps.weight", t.type, {t.dims[0], rows, t.dims[2]},
                   std::move(bytes));
  }
  return gguf::GgufFile::from_bytes(out.to_bytes(), "fused.gguf");
}

class FusedGateUpExps : public ::testing::TestWithParam<const char*> {};

TEST_P(FusedGateUpExps, GivesTheSplitFilesLogitsBitForBit) {
  const auto dir = testing::source_dir() / "tests/model/data/hybrid";
  const std::string name = GetParam();
  const testing::GoldenLogits g = testing::read_golden_logits(dir / (name + ".logits.bin"));
  const auto split = Model::load(dir / (name + ".gguf"));
  const auto one = Model::from_file(fused(gguf::GgufFile::open(dir / (name + ".gguf"))));
  ASSERT_GT(one->config().moe.n_expert, 0);
  const std::vector<float> want = testing::run_golden_tokens(*split, g, 2);
  const std::vector<float> got = testing::run_golden_tokens(*one, g, 2);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
}

TEST_P(FusedGateUpExps, AHalfFusedTensorIsRefusedByShape) {
  const auto dir = testing::source_dir() / "tests/model/data/hybrid";
  try {
    Model::from_file(fused(gguf::GgufFile::open(dir / (std::string(GetParam()) + ".gguf")), true));
    FAIL() << "a gate_up tensor of n_ff_exp rows per expert was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("ffn_gate_up_exps.weight"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("expected"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Files, FusedGateUpExps, ::testing::Values("qwen35moe", "qwen3next"),
                         [](const auto& param_info) {
                           return testing::golden_test_name(param_info.param);
                         });

}  // namespace fused_gate_up
}  // namespace
}  // namespace kvforge
