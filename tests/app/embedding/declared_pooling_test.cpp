// Pooling as the file declares it (`<arch>.pooling_type`, llama.cpp's enum):
// copies of the random-weight qwen3 file with the key set, written at test
// time. A qwen3 file declaring last-token pooling is how Qwen3-Embedding
// ships; its embeddings must equal llama.cpp's for that pooling on the same
// weights (data/qwen3_embeddings.json).
#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "app/embedding/embedder.h"
#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"
#include "embedding_golden.h"

namespace kvforge {
namespace {

// The golden's qwen3 file, with qwen3.pooling_type = `type` when given.
std::unique_ptr<Model> qwen3_declaring(const testing::EmbeddingGolden& golden,
                                       std::optional<uint32_t> type) {
  gguf::GgufWriter w = gguf::GgufWriter::from_file(gguf::GgufFile::open(golden.model));
  if (type) w.set("qwen3.pooling_type", gguf::Value::u32(*type));
  return Model::from_file(gguf::GgufFile::from_bytes(w.to_bytes(), "declared-pooling.gguf"));
}

TEST(DeclaredPooling, TheFilesPoolingIsTakenAndEqualsLlamaCpp) {
  const testing::EmbeddingGolden golden = testing::read_embedding_golden("qwen3");
  ThreadPool pool(2);
  for (Pooling declared : {Pooling::Last, Pooling::Mean, Pooling::Cls}) {
    SCOPED_TRACE(pooling_name(declared));
    const auto model = qwen3_declaring(golden, uint32_t(declared));
    // The fallback is another pooling than the declared one: the file wins.
    const Pooling other = declared == Pooling::Mean ? Pooling::Last : Pooling::Mean;
    const Pooling picked = model_pooling(*model, other);
    EXPECT_EQ(picked, declared);
    const Embedder embedder(*model, pool, picked);
    EXPECT_EQ(testing::expect_golden_cases(*model, embedder, golden, testing::kF32Bound).cases, 2);
  }
}

TEST(DeclaredPooling, NoneOrNoKeyFallsBack) {
  const testing::EmbeddingGolden golden = testing::read_embedding_golden("qwen3");
  EXPECT_EQ(model_pooling(*qwen3_declaring(golden, std::nullopt), Pooling::Cls), Pooling::Cls);
  EXPECT_EQ(model_pooling(*qwen3_declaring(golden, 0), Pooling::Mean), Pooling::Mean);
}

// A reranker's rank pooling (4) and values past llama.cpp's enum change what
// is computed: refused by name, never replaced by the fallback.
TEST(DeclaredPooling, RankAndUnknownValuesAreRefusedByName) {
  const testing::EmbeddingGolden golden = testing::read_embedding_golden("qwen3");
  for (uint32_t type : {4u, 9u}) {
    const auto model = qwen3_declaring(golden, type);
    try {
      model_pooling(*model, Pooling::Last);
      ADD_FAILURE() << "pooling_type " << type << " was accepted";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("qwen3.pooling_type " + std::to_string(type)), std::string::npos) << what;
      EXPECT_NE(what.find(type == 4 ? "rank" : "not one of"), std::string::npos) << what;
      EXPECT_NE(what.find("--pooling"), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace kvforge
