// --override-kv KEY=TYPE:VALUE (kvforge quantize), in llama-quantize's notation.
#include "app/tools/key_override.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <variant>

#include "app/tools/quantize_model.h"
#include "app/tools/quantize_recipe.h"
#include "model/random_model.h"

namespace kvforge {
namespace {

TEST(KeyOverride, ParsesEachType) {
  const KeyOverride i = parse_key_override("qwen3.pooling_type=int:3");
  EXPECT_EQ(i.key, "qwen3.pooling_type");
  EXPECT_EQ(i.value.type, gguf::ValueType::UINT32);  // as llama-quantize writes an int
  EXPECT_EQ(std::get<uint64_t>(i.value.data), 3u);
  const KeyOverride f = parse_key_override("llama.rope.freq_base=float:1e6");
  EXPECT_EQ(f.value.type, gguf::ValueType::FLOAT32);
  EXPECT_EQ(std::get<double>(f.value.data), 1e6);
  const KeyOverride b = parse_key_override("tokenizer.ggml.add_bos_token=bool:false");
  EXPECT_EQ(b.value.type, gguf::ValueType::BOOL);
  EXPECT_FALSE(std::get<bool>(b.value.data));
  // A string value keeps any '=' or ':' after the type.
  const KeyOverride s = parse_key_override("general.name=str:a=b:c");
  EXPECT_EQ(std::get<std::string>(s.value.data), "a=b:c");
}

TEST(KeyOverride, RefusesMalformedTextQuotingIt) {
  for (const char* bad : {"no-equals", "=int:3", "k=3", "k=uint:3", "k=int:-1", "k=int:4294967296",
                          "k=int:3x", "k=int:", "k=float:inf", "k=float:x", "k=bool:yes"}) {
    SCOPED_TRACE(bad);
    try {
      parse_key_override(bad);
      ADD_FAILURE() << "accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos)
          << e.what();
    }
  }
}

// The output carries the override (after general.file_type, so it can set
// that too); the tensors are those of the plan.
TEST(KeyOverride, QuantizedFileCarriesTheOverride) {
  const gguf::GgufFile model =
      gguf::GgufFile::from_bytes(make_random_model(RandomModelSpec{}).to_bytes());
  const std::vector<PlannedTensor> plan = plan_quantization(
      read_quant_facts(model), read_quant_tensors(model), parse_quant_recipe("f32", false));
  const auto out = std::filesystem::temp_directory_path() / "kvforge_key_override.gguf";
  write_quantized(model, plan, LlamaFtype::ALL_F32, out,
                  {parse_key_override("llama.pooling_type=int:1")});
  const gguf::GgufFile written = gguf::GgufFile::open(out);
  EXPECT_EQ(written.get_u32_or("llama.pooling_type", 0), 1u);
  ASSERT_EQ(written.tensors().size(), model.tensors().size());
  for (size_t i = 0; i < model.tensors().size(); ++i) {
    const auto a = model.tensor_data(model.tensors()[i]);
    const auto b = written.tensor_data(written.tensors()[i]);
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << model.tensors()[i].name;
  }
  std::filesystem::remove(out);
}

}  // namespace
}  // namespace kvforge
