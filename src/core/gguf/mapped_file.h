// A read-only memory mapping of a whole file, owned RAII-style. Pages are
// faulted in on first touch, so opening a multi-gigabyte model is cheap and
// tensor data is read straight from the page cache without a copy.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>

namespace kvforge::gguf {

class MappedFile {
 public:
  MappedFile() = default;
  // Maps `path` read-only. Throws GgufError naming the path and the OS error.
  // An empty file yields an empty mapping (the parser then reports it as too small).
  explicit MappedFile(const std::filesystem::path& path);
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const uint8_t> bytes() const { return {data_, size_}; }

  // Drops the whole pages of `range` (which must lie inside bytes()) from
  // this process's resident memory; touching them again reads them back from
  // the file (the mapping is private and never written, so nothing is lost).
  // For data copied elsewhere and no longer read here. Throws
  // std::invalid_argument for a range outside the mapping.
  void release(std::span<const uint8_t> range) const;

 private:
  void unmap();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace kvforge::gguf
