// Qwen 3.5 (qwen35) files as llama.cpp reads them: the hybrid layout, every
// `ssm.*` key required, an unknown recurrent-layer kind, an older qwen3next file,
// a RoPE layout text cannot compute and tensor parallelism refused naming
// what; the multi-token-prediction blocks skipped without changing a bit; a
// recurrent state that can only continue where it stopped.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"
#include "edited_model.h"
#include "engine/kv/contiguous_kv_cache.h"
#include "engine/sequence_runner.h"
#include "model/forward.h"
#include "model/model.h"
#include "model/random_model.h"

namespace kvforge {
namespace {

using testing::edited_model;
using testing::expect_mentions;
using testing::load_error;

RandomModelSpec hybrid_spec() {
  RandomModelSpec s;
  s.arch = "qwen35";
  s.n_layer = 8;
  s.head_dim = 32;
  s.n_ctx = 256;
  s.seed = 5;
  return s;
}

// The hybrid file without metadata key `key`.
gguf::GgufFile without_key(const std::string& key) {
  const gguf::GgufFile src =
      gguf::GgufFile::from_bytes(make_random_model(hybrid_spec()).to_bytes());
  gguf::GgufWriter out(3, src.alignment());
  for (const gguf::KeyValue& kv : src.metadata())
    if (kv.key != key) out.set(kv.key, kv.value);
  for (const gguf::TensorInfo& t : src.tensors()) {
    const auto data = src.tensor_data(t);
    out.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(data.begin(), data.end()));
  }
  return gguf::GgufFile::from_bytes(out.to_bytes(), "edited.gguf");
}

TEST(HybridModel, EveryFourthLayerIsFullAttention) {
  const auto model = Model::from_file(
      gguf::GgufFile::from_bytes(make_random_model(hybrid_spec()).to_bytes(), "q35"));
  const ModelConfig& c = model->config();
  ASSERT_TRUE(c.hybrid());
  EXPECT_EQ(c.recurrent_layers, (std::vector<uint8_t>{1, 1, 1, 0, 1, 1, 1, 0}));
  EXPECT_TRUE(c.attn_gate);
  EXPECT_EQ(c.rope_dim, 8);  // head_dim / 4, rope.dimension_count
  EXPECT_EQ(c.linear.conv_channels(), 2 * 2 * 16 + 4 * 16);
  // Six layers of conv window (3 x 128) plus 4 heads of 16 x 16 matrices, f32.
  EXPECT_EQ(c.state_bytes_per_sequence(), size_t(6 * (3 * 128 + 4 * 16 * 16) * 4));
}

// The array says which layers are recurrent (as the file's tensors are laid
// out) whatever full_attention_interval says; an array that disagrees with
// the tensors is refused by their shapes.
TEST(HybridModel, RecurrentLayersArrayOverridesTheInterval) {
  const auto with_flags = [](int full_every) {
    return [full_every](gguf::GgufWriter& w) {
      std::vector<gguf::Value> flags;
      for (int l = 0; l < 8; ++l) flags.push_back(gguf::Value::boolean((l + 1) % full_every != 0));
      w.set("qwen35.attention.recurrent_layers", gguf::Value::array(gguf::ValueType::BOOL, flags));
      w.set("qwen35.full_attention_interval", gguf::Value::u32(2));
    };
  };
  const auto model = Model::from_file(edited_model(hybrid_spec(), with_flags(4)));
  EXPECT_EQ(model->config().recurrent_layers, (std::vector<uint8_t>{1, 1, 1, 0, 1, 1, 1, 0}));
  expect_mentions(load_error(edited_model(hybrid_spec(), with_flags(2))),
                  {"blk.1.attn_qkv.weight", "has shape"});
}

TEST(HybridModel, EverySsmKeyIsRequired) {
  for (const char* key :
       {"qwen35.ssm.conv_kernel", "qwen35.ssm.state_size", "qwen35.ssm.group_count",
        "qwen35.ssm.time_step_rank", "qwen35.ssm.inner_size", "qwen35.rope.dimension_sections"}) {
    SCOPED_TRACE(key);
    expect_mentions(load_error(without_key(key)), {"edited.gguf", "missing required key", key});
  }
}

TEST(HybridModel, UnknownRecurrentLayerKindIsRefused) {
  // attention.recurrent_layers says which layers are recurrent with booleans;
  // anything else names a layer kind kvforge cannot compute.
  const std::string what = load_error(edited_model(hybrid_spec(), [](gguf::GgufWriter& w) {
    w.set("qwen35.attention.recurrent_layers",
          gguf::Value::string_array(
              {"linear", "linear", "linear", "full", "mamba2", "linear", "linear", "full"}));
  }));
  expect_mentions(what, {"edited.gguf", "qwen35.attention.recurrent_layers", "booleans"});
}

TEST(HybridModel, InconsistentShapesAndLayoutsAreRefused) {
  const auto refuse = [](const std::function<void(gguf::GgufWriter&)>& edit,
                         std::initializer_list<const char*> parts) {
    expect_mentions(load_error(edited_model(hybrid_spec(), edit)), parts);
  };
  refuse([](gguf::GgufWriter& w) { w.set("qwen35.ssm.inner_size", gguf::Value::u32(48)); },
         {"qwen35.ssm.inner_size = 48", "state_size"});
  refuse([](gguf::GgufWriter& w) { w.set("qwen35.ssm.time_step_rank", gguf::Value::u32(3)); },
         {"qwen35.ssm.time_step_rank = 3", "group_count"});
  // Sections [1, 1, 1, 1]: pairs 3.. of the 4 rotated pairs take the fourth position.
  refuse(
      [](gguf::GgufWriter& w) {
        w.set("qwen35.rope.dimension_sections", gguf::Value::i32_array({1, 1, 1, 1}));
      },
      {"qwen35.rope.dimension_sections", "fourth (extra) position"});
  refuse([](gguf::GgufWriter& w) { w.set("qwen35.ssm.dt_b_c_rms", gguf::Value::boolean(true)); },
         {"qwen35.ssm.dt_b_c_rms", "does not implement"});
  refuse([](gguf::GgufWriter& w) { w.set("qwen35.nextn_predict_layers", gguf::Value::u32(8)); },
         {"qwen35.nextn_predict_layers = 8"});
}

// qwen3next loads (hybrid_moe_model_test.cpp) but for older conversions,
// which fuse q|k|v|z per key head into ssm_in.
TEST(HybridModel, Qwen3NextOfTheOlderFusedLayoutIsRefusedSayingWhy) {
  RandomModelSpec s = hybrid_spec();
  s.arch = "qwen3next";
  const std::string what = load_error(edited_model(
      s, [](gguf::GgufWriter&) {}, "blk.0.ssm_in.weight"));
  expect_mentions(what, {"edited.gguf", "blk.0.ssm_in.weight", "not supported", "convert"});
}

// Two ranks split the linear-attention heads (model/linear_attention_tp.h);
// four cannot split the file's 2 key heads and are refused, naming them.
TEST(HybridModel, TensorParallelismRefusesRanksBeyondTheKeyHeads) {
  const gguf::GgufFile f =
      gguf::GgufFile::from_bytes(make_random_model(hybrid_spec()).to_bytes(), "q35");
  const ModelConfig c = ModelConfig::from_gguf(f);
  EXPECT_EQ(ModelWeights::from_gguf(f, c, 1, 2).layers[0].linear.qkv.rows,
            c.linear.conv_channels() / 2);
  try {
    ModelWeights::from_gguf(f, c, 0, 4);
    FAIL() << "a hybrid model's 2 key heads were split over 4 ranks";
  } catch (const std::invalid_argument& e) {
    expect_mentions(e.what(), {"4 ranks", "2 linear-attention key heads"});
  }
}

// The logits of a prompt (one prefill) and 6 decoded tokens.
std::vector<float> run(const Model& model) {
  ThreadPool pool(2);
  SequenceRunner r(model, pool, {.n_ctx = 64, .max_batch = 512, .kv_format = {}});
  std::vector<int32_t> prompt;
  for (int i = 0; i < 20; ++i) prompt.push_back(3 + (i * 37) % 250);
  const auto p = r.prefill(prompt);
  std::vector<float> out(p.begin(), p.end());
  for (int i = 0; i < 6; ++i) {
    const auto d = r.decode(3 + i * 11);
    out.insert(out.end(), d.begin(), d.end());
  }
  return out;
}

// qwen35moe's and qwen3next's MTP blocks hold experts and a shared expert too.
TEST(HybridModel, MtpBlocksAreSkippedWithoutChangingABit) {
  for (const char* arch : {"qwen35", "qwen35moe", "qwen3next"}) {
    SCOPED_TRACE(arch);
    RandomModelSpec plain_spec = hybrid_spec();
    plain_spec.arch = arch;
    RandomModelSpec with = plain_spec;
    with.n_mtp = 1;
    const auto plain = Model::from_file(
        gguf::GgufFile::from_bytes(make_random_model(plain_spec).to_bytes(), "plain"));
    const auto mtp =
        Model::from_file(gguf::GgufFile::from_bytes(make_random_model(with).to_bytes(), "mtp"));
    EXPECT_EQ(mtp->config().n_layer, 8);
    EXPECT_EQ(mtp->config().n_layer_mtp, 1);
    const std::vector<float> a = run(*plain), b = run(*mtp);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
  }
}

TEST(HybridModel, StateContinuesOnlyWhereItStopped) {
  const auto model = Model::from_file(
      gguf::GgufFile::from_bytes(make_random_model(hybrid_spec()).to_bytes(), "q35"));
  ThreadPool pool(1);
  ContiguousKvCache kv(model->rank_config(), 64, KvFormat{}, 1);
  ForwardScratch scratch(model->rank_config());
  std::vector<float> logits(size_t(model->config().n_vocab));
  const int32_t tokens[] = {5, 6, 7};
  const int32_t from0[] = {0, 1, 2}, skip[] = {4, 5, 6}, again[] = {3, 4, 5};
  const int32_t last[] = {2};
  forward(*model, {tokens, from0, {}, last}, kv, scratch, pool, logits.data());
  // Position 4 after 0..2: position 3's token would be missing from the state.
  try {
    forward(*model, {tokens, skip, {}, last}, kv, scratch, pool, logits.data());
    FAIL() << "a state holding 3 positions continued at 4";
  } catch (const std::logic_error& e) {
    expect_mentions(e.what(), {"sequence 0", "position 4", "holds 3 positions"});
  }
  forward(*model, {tokens, again, {}, last}, kv, scratch, pool, logits.data());
}

TEST(HybridModel, StoreWithoutStatesIsRefused) {
  const auto model = Model::from_file(
      gguf::GgufFile::from_bytes(make_random_model(hybrid_spec()).to_bytes(), "q35"));
  struct NoStates : KvStore {
    KvFormat format() const override { return {}; }
    void write(int, int32_t, int32_t, const float*, const float*) override {}
    void spans(int, int32_t, int32_t, int32_t, std::vector<KvSpan>&) const override {}
  } store;
  ThreadPool pool(1);
  ForwardScratch scratch(model->rank_config());
  std::vector<float> logits(size_t(model->config().n_vocab));
  const int32_t tokens[] = {5}, pos[] = {0}, rows[] = {0};
  EXPECT_THROW(forward(*model, {tokens, pos, {}, rows}, store, scratch, pool, logits.data()),
               std::logic_error);
}

}  // namespace
}  // namespace kvforge
