// Model::load regroups matrices into copies for the kernels and drops the
// file's pages of the copied ones from resident memory
// (GgufFile::release_pages). Those pages must never be needed again: a model
// loaded from a file computes the same bits as the same bytes held in memory
// (where nothing is released), including a tied output, whose source bytes
// are the token embeddings that stay in use.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "engine_test_util.h"

namespace kvforge {
namespace {

TEST(ModelLoad, AMappedModelComputesWhatTheSameBytesInMemoryDo) {
  for (GgmlType type : {GgmlType::F16, GgmlType::Q8_0, GgmlType::F32}) {
    for (bool tied : {false, true}) {
      RandomModelSpec spec;
      spec.name = "release";
      spec.weight_type = type;
      spec.tied_output = tied;
      spec.n_ctx = 64;
      const gguf::GgufWriter writer = make_random_model(spec);
      const std::filesystem::path path =
          std::filesystem::temp_directory_path() /
          ("kvforge-release-" + std::to_string(::getpid()) + ".gguf");
      writer.write(path);
      const auto mapped = Model::load(path);
      std::filesystem::remove(path);
      const auto held = Model::from_file(gguf::GgufFile::from_bytes(writer.to_bytes()));
      const std::string what = std::string(type_name(type)) + (tied ? " tied" : " untied");
      ASSERT_EQ(mapped->weights().layers[0].ffn_up.layout, held->weights().layers[0].ffn_up.layout)
          << what;
      const std::vector<int32_t> prompt = testing::make_prompt(9, 3);
      const testing::Trace a = testing::run_alone(*mapped, prompt, 6);
      const testing::Trace b = testing::run_alone(*held, prompt, 6);
      ASSERT_EQ(a.tokens, b.tokens) << what;
      for (size_t k = 0; k < a.logits.size(); ++k)
        ASSERT_EQ(0, std::memcmp(a.logits[k].data(), b.logits[k].data(), a.logits[k].size() * 4))
            << what << " token " << k;
    }
  }
}

}  // namespace
}  // namespace kvforge
