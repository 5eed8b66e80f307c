// A tokenizer with more tokens than the model has rows is refused at load
// (cli::check_tokenizer_fits): a prompt holding an extra id would be refused
// on every request, and an eos among them never sampled.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "app/cli/cli_common.h"
#include "app/tokenizer/tokenizer.h"
#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"
#include "model/model.h"
#include "model/random_model.h"

namespace kvforge {
namespace {

// The random model (259 tokens, llama.vocab_size stated) with `extra` more
// tokens in tokenizer.ggml.tokens than its embedding has rows.
std::unique_ptr<Model> model_with_extra_tokens(int extra) {
  const gguf::GgufFile src =
      gguf::GgufFile::from_bytes(make_random_model(RandomModelSpec{}).to_bytes());
  std::vector<std::string> tokens = src.get_string_array("tokenizer.ggml.tokens");
  std::vector<float> scores = src.get_f32_array("tokenizer.ggml.scores");
  std::vector<int32_t> types = src.get_i32_array("tokenizer.ggml.token_type");
  const uint32_t rows = uint32_t(tokens.size());
  for (int i = 0; i < extra; ++i) {
    tokens.push_back("<extra_" + std::to_string(i) + ">");
    scores.push_back(0.0f);
    types.push_back(1);
  }
  gguf::GgufWriter out(3, src.alignment());
  for (const gguf::KeyValue& kv : src.metadata()) out.set(kv.key, kv.value);
  out.set("llama.vocab_size", gguf::Value::u32(rows));
  out.set("tokenizer.ggml.tokens", gguf::Value::string_array(tokens));
  out.set("tokenizer.ggml.scores", gguf::Value::f32_array(scores));
  out.set("tokenizer.ggml.token_type", gguf::Value::i32_array(types));
  for (const gguf::TensorInfo& t : src.tensors()) {
    const auto data = src.tensor_data(t);
    out.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(data.begin(), data.end()));
  }
  return Model::from_file(gguf::GgufFile::from_bytes(out.to_bytes(), "extra.gguf"));
}

TEST(CliTokenizerFits, MoreTokensThanModelRowsIsRefused) {
  const auto model = model_with_extra_tokens(1);
  const Tokenizer tokenizer = Tokenizer::from_gguf(model->file());
  try {
    cli::check_tokenizer_fits(tokenizer, *model);
    ADD_FAILURE() << "accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("extra.gguf: tokenizer.ggml.tokens has 260 tokens, "
                                         "expected at most 259"),
              std::string::npos)
        << e.what();
  }
}

TEST(CliTokenizerFits, AsManyTokensAsRowsLoads) {
  const auto model = model_with_extra_tokens(0);
  EXPECT_NO_THROW(cli::check_tokenizer_fits(Tokenizer::from_gguf(model->file()), *model));
}

}  // namespace
}  // namespace kvforge
