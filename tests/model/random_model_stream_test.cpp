// make_random_model generates each tensor while the file is written (one
// piece of rows at a time): the bytes must be those the in-memory writer
// produced before streaming existed, on every architecture and weight type,
// and the same on every write.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "model/model_fingerprint.h"
#include "model/random_model.h"

namespace kvforge {
namespace {

uint64_t fnv(const std::vector<uint8_t>& bytes) {
  Fnv1a64 h;
  h.bytes(bytes.data(), bytes.size());
  return h.value();
}

RandomModelSpec spec_of(const char* arch, GgmlType type) {
  RandomModelSpec s = *RandomModelSpec::preset("tiny");  // as `kvforge make-model` writes it
  s.arch = arch;
  s.weight_type = type;
  return s;
}

// The specs of the golden hashes: every architecture family, several weight
// types, and (the last) a 10000-row embedding of 1.28 M values, larger than
// one generated piece, so that the pieces' seams are covered.
std::vector<RandomModelSpec> golden_specs() {
  std::vector<RandomModelSpec> specs = {
      spec_of("llama", GgmlType::F32),     spec_of("qwen3moe", GgmlType::Q8_0),
      spec_of("gpt-oss", GgmlType::MXFP4), spec_of("qwen35moe", GgmlType::Q4_0),
      spec_of("gemma4", GgmlType::F16),    spec_of("phi3", GgmlType::Q4_K),
      spec_of("llama", GgmlType::Q8_0),
  };
  specs[4].n_kv_shared = 1;
  specs[5].n_embd = 256;
  specs[5].n_ff = 256;
  specs[6].n_embd = 128;
  specs[6].n_head = 4;
  specs[6].n_vocab = 10000;
  return specs;
}

// FNV-1a 64 of the files the in-memory writer (before streaming, commit
// 6323ff3) produced for golden_specs(), in order.
constexpr uint64_t kGoldenHashes[] = {
    0xb824a508959844abull, 0x3954357f23c4dd77ull, 0x154fffa535c847aaull, 0x48706ca1d16eed79ull,
    0x6686e518ec42a127ull, 0xb8084d275ca612aeull, 0xa34e365b441d3cd4ull};

TEST(RandomModelStream, BytesEqualTheInMemoryWritersOnEveryArchitecture) {
  const std::vector<RandomModelSpec> specs = golden_specs();
  ASSERT_EQ(specs.size(), std::size(kGoldenHashes));
  for (size_t i = 0; i < specs.size(); ++i)
    EXPECT_EQ(fnv(make_random_model(specs[i]).to_bytes()), kGoldenHashes[i])
        << specs[i].arch << " " << type_name(specs[i].weight_type);
}

// Written twice (the random stream restarts), to a file and in memory, with
// two quantizing threads: the same bytes as the golden.
TEST(RandomModelStream, EveryWriteGivesTheSameBytesAtAnyThreadCount) {
  RandomModelSpec spec = golden_specs().back();
  spec.threads = 2;
  const gguf::GgufWriter w = make_random_model(spec);
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("random-stream-" + std::to_string(::getpid()) + ".gguf");
  w.write(path);
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> file{std::istreambuf_iterator<char>(in), {}};
  std::filesystem::remove(path);
  EXPECT_EQ(fnv(file), kGoldenHashes[std::size(kGoldenHashes) - 1]);
  EXPECT_EQ(w.to_bytes(), file);
}

}  // namespace
}  // namespace kvforge
