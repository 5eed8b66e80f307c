#include "model/model.h"

namespace kvforge {

std::unique_ptr<Model> Model::load(const std::filesystem::path& path) {
  return from_file(gguf::GgufFile::open(path));
}

std::unique_ptr<Model> Model::from_file(gguf::GgufFile file) {
  ModelConfig config = ModelConfig::from_gguf(file);
  // The weight views point into the mapping, which moving GgufFile keeps in place.
  ModelWeights weights = ModelWeights::from_gguf(file, config);
  // The file's pages of the matrices copied are dropped from resident memory
  // (small F16: ~200 MB that would otherwise be counted twice).
  weights.regroup_for_kernels([&](std::span<const uint8_t> src) { file.release_pages(src); });
  return std::unique_ptr<Model>(new Model(std::move(file), std::move(config), std::move(weights)));
}

uint64_t Model::n_params() const {
  uint64_t n = 0;
  for (const gguf::TensorInfo& t : file_.tensors()) n += t.n_elements;
  return n;
}

}  // namespace kvforge
