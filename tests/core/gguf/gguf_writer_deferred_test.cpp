// Deferred tensors (GgufWriter::add_deferred_tensor): produced in pieces
// while the file is written, the file the same bytes as with the data given
// up front, write() and to_bytes() agreeing, progress told in order.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/gguf/gguf_writer.h"

namespace kvforge::gguf {
namespace {

std::vector<uint8_t> ramp(size_t n, uint8_t start) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(start + i);
  return v;
}

// Two F32 tensors (40 and 12 bytes: both need padding), given whole.
GgufWriter given_whole() {
  GgufWriter w;
  w.set("general.name", Value::string("deferred"));
  w.add_tensor("a", GgmlType::F32, {10}, ramp(40, 1));
  w.add_tensor("b", GgmlType::F32, {3}, ramp(12, 100));
  return w;
}

// The same tensors, the first produced in pieces of 7, 0 and 33 bytes.
GgufWriter deferred(int* passes) {
  GgufWriter w;
  w.set("general.name", Value::string("deferred"));
  w.add_deferred_tensor("a", GgmlType::F32, {10}, [](const TensorBytesSink& out) {
    const std::vector<uint8_t> v = ramp(40, 1);
    out(std::span(v).subspan(0, 7));
    out(std::span(v).subspan(7, 0));
    out(std::span(v).subspan(7));
  });
  w.add_deferred_tensor("b", GgmlType::F32, {3},
                        [](const TensorBytesSink& out) { out(ramp(12, 100)); });
  w.set_pass_start([passes] { ++*passes; });
  return w;
}

TEST(GgufWriterDeferred, SameBytesAsTensorsGivenWhole) {
  int passes = 0;
  const GgufWriter w = deferred(&passes);
  EXPECT_EQ(w.to_bytes(), given_whole().to_bytes());
  EXPECT_EQ(w.to_bytes(), given_whole().to_bytes());  // producers run again
  EXPECT_EQ(passes, 2);
}

TEST(GgufWriterDeferred, WriteStreamsTheSameBytesAndTellsProgress) {
  int passes = 0;
  const GgufWriter w = deferred(&passes);
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("deferred-" + std::to_string(::getpid()) + ".gguf");
  std::vector<uint64_t> done;
  std::vector<std::string> names;
  w.write(path, [&](uint64_t d, uint64_t total, const std::string& tensor) {
    EXPECT_EQ(total, 52u);
    done.push_back(d);
    names.push_back(tensor);
  });
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> file{std::istreambuf_iterator<char>(in), {}};
  std::filesystem::remove(path);
  EXPECT_EQ(file, given_whole().to_bytes());
  EXPECT_EQ(done, (std::vector<uint64_t>{7, 7, 40, 52, 52}));
  EXPECT_EQ(names, (std::vector<std::string>{"a", "a", "a", "b", ""}));
}

TEST(GgufWriterDeferred, ProducerOfTheWrongSizeIsAnError) {
  for (size_t n : {36u, 44u}) {
    GgufWriter w;
    w.add_deferred_tensor("short_or_long", GgmlType::F32, {10},
                          [n](const TensorBytesSink& out) { out(ramp(n, 0)); });
    try {
      (void)w.to_bytes();
      FAIL() << n;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("'short_or_long': its producer gave " +
                                           std::to_string(n) + " bytes, expected 40"),
                std::string::npos)
          << e.what();
    }
  }
  GgufWriter w;
  EXPECT_THROW(w.add_deferred_tensor("none", GgmlType::F32, {10}, {}), std::invalid_argument);
  EXPECT_THROW(w.add_deferred_tensor("odd", GgmlType::Q8_0, {10}, [](const auto&) {}),
               std::invalid_argument);
}

}  // namespace
}  // namespace kvforge::gguf
