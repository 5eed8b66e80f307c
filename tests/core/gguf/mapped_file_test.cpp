// MappedFile::release: the pages of a range copied elsewhere leave this
// process's resident memory, and reading them again gives the file's bytes.
#include "core/gguf/mapped_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvforge {
namespace mapped_file_test {  // named: the tests build in unity batches (tests/CMakeLists.txt)

// Resident kB of the mapping that contains `p`, from /proc/self/smaps (-1: not found).
long resident_kb(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &begin, &end) == 2 && line.find(':') > 12) {
      inside = uintptr_t(p) >= begin && uintptr_t(p) < end;
    } else if (inside && line.rfind("Rss:", 0) == 0) {
      return std::stol(line.substr(4));
    }
  }
  return -1;
}

uint8_t pattern(size_t i) { return uint8_t(i * 7 % 251); }

TEST(MappedFile, ReleaseDropsWholePagesAndTheyReadBackFromTheFile) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("kvforge-mapped-" + std::to_string(getpid()));
  constexpr size_t kBytes = (size_t(4) << 20) + 100;
  {
    std::vector<char> bytes(kBytes);
    for (size_t i = 0; i < kBytes; ++i) bytes[i] = char(pattern(i));
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(kBytes));
  }
  gguf::MappedFile file(path);
  std::filesystem::remove(path);  // the mapping keeps the file's pages
  const std::span<const uint8_t> all = file.bytes();
  ASSERT_EQ(all.size(), kBytes);
  uint64_t sum = 0;
  for (uint8_t b : all) sum += b;  // every page resident
  const long before = resident_kb(all.data());
  if (before < 0) GTEST_SKIP() << "no /proc/self/smaps entry for the mapping";
  ASSERT_GE(before, 4000) << "sum " << sum;

  file.release(all.subspan(10, size_t(3) << 20));  // unaligned ends: only whole pages go
  const long after = resident_kb(all.data());
  EXPECT_LE(after, before - 3000) << "released 3 MiB, resident " << before << " -> " << after;
  for (size_t i = 0; i < kBytes; ++i) ASSERT_EQ(all[i], pattern(i)) << "byte " << i;

  file.release({});  // nothing to do
  const std::vector<uint8_t> elsewhere(16);
  EXPECT_THROW(file.release(elsewhere), std::invalid_argument);
  EXPECT_THROW(file.release(std::span(all.data() + 1, kBytes)), std::invalid_argument);
}

}  // namespace mapped_file_test
}  // namespace kvforge
