// The reader against GGUF files written by other tools (llama.cpp's gguf-py),
// with facts documented in ../shared/testdata/README.md.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"
#include "testdata.h"

namespace kvforge::gguf {
namespace {

using kvforge::testing::testdata;

TEST(GgufRealFiles, LlamaSpmVocabulary) {
  KVFORGE_REQUIRE_TESTDATA();
  const GgufFile f = GgufFile::open(testdata("vocab/ggml-vocab-llama-spm.gguf"));
  EXPECT_EQ(f.version(), 3u);
  EXPECT_TRUE(f.tensors().empty());
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "llama");

  const std::vector<std::string> tokens = f.get_string_array("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 32000u);
  // SentencePiece LLaMA vocabulary: <unk>, <s>, </s>, then the 256 byte tokens.
  EXPECT_EQ(tokens[0], "<unk>");
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(tokens[2], "</s>");
  EXPECT_EQ(tokens[3], "<0x00>");
  EXPECT_EQ(tokens[258], "<0xFF>");
  EXPECT_EQ(f.get_f32_array("tokenizer.ggml.scores").size(), 32000u);
  const std::vector<int32_t> types = f.get_i32_array("tokenizer.ggml.token_type");
  ASSERT_EQ(types.size(), 32000u);
  EXPECT_EQ(types[0], 2);    // UNKNOWN
  EXPECT_EQ(types[1], 3);    // CONTROL
  EXPECT_EQ(types[3], 6);    // BYTE
  EXPECT_EQ(types[300], 1);  // NORMAL
  EXPECT_EQ(f.get_u32("tokenizer.ggml.bos_token_id"), 1u);
  EXPECT_EQ(f.get_u32("tokenizer.ggml.eos_token_id"), 2u);
  EXPECT_EQ(f.get_u32("llama.block_count"), 32u);
  EXPECT_EQ(f.get_u32("llama.embedding_length"), 4096u);
}

TEST(GgufRealFiles, GoldenTinyModel) {
  KVFORGE_REQUIRE_TESTDATA();
  const GgufFile f = GgufFile::open(testdata("golden/tiny-mha-e64-l2-f32.gguf"));
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_u32("llama.block_count"), 2u);
  EXPECT_EQ(f.get_u32("llama.embedding_length"), 64u);
  EXPECT_EQ(f.get_u32("llama.attention.head_count"), 4u);
  // Despite its name (and testdata/README.md, which says 4), this file has 2 KV
  // heads: attn_k below is [64, 32] = 2 heads of head_dim 16.
  EXPECT_EQ(f.get_u32("llama.attention.head_count_kv"), 2u);
  EXPECT_EQ(f.get_u32("llama.feed_forward_length"), 192u);
  EXPECT_FLOAT_EQ(f.get_f32("llama.attention.layer_norm_rms_epsilon"), 1e-5f);
  EXPECT_FLOAT_EQ(f.get_f32("llama.rope.freq_base"), 10000.0f);
  EXPECT_TRUE(f.get_bool("tokenizer.ggml.add_bos_token"));
  EXPECT_FALSE(f.get_bool("tokenizer.ggml.add_eos_token"));
  EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens").size(), 32000u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.data_offset() % 32, 0u);

  // 2 layers x 9 tensors + token_embd, output_norm, output.
  ASSERT_EQ(f.tensors().size(), 21u);
  const TensorInfo* embd = f.find_tensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->type, GgmlType::F32);
  EXPECT_EQ(embd->dims, (std::vector<uint64_t>{64, 32000}));
  EXPECT_EQ(embd->n_bytes, 64u * 32000 * 4);
  const TensorInfo* wq = f.find_tensor("blk.1.attn_q.weight");
  ASSERT_NE(wq, nullptr);
  EXPECT_EQ(wq->dims, (std::vector<uint64_t>{64, 64}));
  const TensorInfo* wk = f.find_tensor("blk.0.attn_k.weight");
  ASSERT_NE(wk, nullptr);
  EXPECT_EQ(wk->dims, (std::vector<uint64_t>{64, 32}));
  const TensorInfo* down = f.find_tensor("blk.0.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->dims, (std::vector<uint64_t>{192, 64}));
  // Tensors follow each other in the data section: token_embd first, at offset 0.
  EXPECT_EQ(embd->offset, 0u);
  EXPECT_EQ(f.tensors()[1].offset, 64u * 32000 * 4);
  EXPECT_EQ(f.data_offset() + f.tensors().back().offset + f.tensors().back().n_bytes,
            f.file_size());
  const TensorInfo* norm = f.find_tensor("output_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->dims, (std::vector<uint64_t>{64}));
  EXPECT_EQ(f.find_tensor("blk.2.attn_q.weight"), nullptr);

  // Every tensor's bytes are finite floats (random weights, norms near 1).
  for (const TensorInfo& t : f.tensors()) {
    const std::span<const uint8_t> bytes = f.tensor_data(t);
    ASSERT_EQ(bytes.size(), t.n_bytes) << t.name;
    for (size_t i = 0; i < bytes.size(); i += 4) {
      float x;
      std::memcpy(&x, bytes.data() + i, 4);
      ASSERT_TRUE(std::isfinite(x)) << t.name << " element " << i / 4;
    }
  }
}

// Files written by gguf-py come back byte for byte through GgufWriter: same
// key order and types, tensor infos, offsets and padding.
class GgufRealFileRewrite : public ::testing::TestWithParam<const char*> {};

TEST_P(GgufRealFileRewrite, IsByteIdentical) {
  KVFORGE_REQUIRE_TESTDATA();
  const auto path = testdata(GetParam());
  const GgufFile f = GgufFile::open(path);
  const std::vector<uint8_t> rewritten = GgufWriter::from_file(f).to_bytes();
  ASSERT_EQ(rewritten.size(), f.file_size());
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> original((std::istreambuf_iterator<char>(in)),
                                      std::istreambuf_iterator<char>());
  ASSERT_EQ(original.size(), rewritten.size());
  size_t first_difference = 0;
  while (first_difference < original.size() &&
         original[first_difference] == rewritten[first_difference]) {
    ++first_difference;
  }
  EXPECT_EQ(first_difference, original.size()) << "first differing byte";
}

INSTANTIATE_TEST_SUITE_P(
    Files, GgufRealFileRewrite,
    ::testing::Values("vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-llama-bpe.gguf",
                      "vocab/ggml-vocab-gpt-2.gguf", "vocab/ggml-vocab-qwen2.gguf",
                      "vocab/ggml-vocab-phi-3.gguf", "golden/tiny-mha-e64-l2-f32.gguf",
                      "golden/tiny-gqa-e64-l2-f32.gguf"));

}  // namespace
}  // namespace kvforge::gguf
