// Driver used when the fuzz targets are built without libFuzzer: runs the
// target once on every file named on the command line (or in a directory).
// A missing path or an empty corpus is an error, so that a smoke test cannot
// pass by replaying nothing.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static void run_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
}

int main(int argc, char** argv) {
  size_t n = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path p(argv[i]);
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p)) {
        if (e.is_regular_file()) run_file(e.path()), ++n;
      }
    } else if (std::filesystem::is_regular_file(p)) {
      run_file(p), ++n;
    } else {
      std::fprintf(stderr, "no such corpus file or directory: %s\n", argv[i]);
      return 1;
    }
  }
  std::printf("replayed %zu inputs\n", n);
  return n > 0 ? 0 : 1;
}
