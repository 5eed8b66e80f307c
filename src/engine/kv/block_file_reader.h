// Reads one whole KV block file (kv_block_file.h) into a buffer this reader
// owns, buffered (through the page cache) or with O_DIRECT (straight from the
// device into an aligned buffer, bypassing the page cache). KvDiskTier picks
// the mode; one reader serves one thread at a time.
//
// O_DIRECT wants the buffer, the file offset and the length aligned
// (kAlignment covers 512- and 4096-byte devices). A block file's size is not
// a multiple of it, so the read asks for the size rounded up and the kernel
// returns the short tail at the end of the file; a file system that refuses
// O_DIRECT at open (tmpfs) or on the unaligned tail gets a buffered read for
// the whole file or for the tail.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <span>

namespace kvforge {

enum class KvReadMode { kBuffered, kDirect };

struct FileRead {
  enum Status { kOk, kMissing, kError } status = kError;
  int error = 0;                        // errno when kError
  std::span<const uint8_t> bytes = {};  // the file's first min(size, limit) bytes
};

class BlockFileReader {
 public:
  static constexpr size_t kAlignment = 4096;

  explicit BlockFileReader(KvReadMode mode) : mode_(mode) {}

  KvReadMode mode() const { return mode_; }
  // Reads at most `limit` bytes of `path` (a hostile size costs nothing).
  // `bytes` views this reader's buffer until the next read.
  FileRead read(const std::filesystem::path& path, size_t limit);

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  // Grows buf_ to hold n bytes rounded up to kAlignment.
  void reserve(size_t n);
  // Reads [done, want) of fd buffered (pread) into buf_; false on an error.
  bool read_buffered(int fd, size_t want, size_t& done);

  KvReadMode mode_;
  std::unique_ptr<uint8_t[], Free> buf_;  // [capacity_] kAlignment-aligned
  size_t capacity_ = 0;
};

}  // namespace kvforge
