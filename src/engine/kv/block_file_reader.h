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
//
// Files in the tier's directory are untrusted: only a regular file of the
// expected size with no other name (not a hard link to a file elsewhere)
// is read. A symbolic link is never followed (lstat, then
// O_NOFOLLOW), a special file is never opened (a FIFO would block the read
// forever; O_NONBLOCK covers one swapped in between lstat and open), and
// fstat on the open descriptor checks type and size again before a byte is
// read.
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
  // kRefused: the entry is not a regular file of the expected size with one
  // name (a link, a FIFO, a directory, a device, a file it may not open):
  // nothing was read.
  enum Status { kOk, kMissing, kRefused, kError } status = kError;
  int error = 0;                        // errno when kError
  std::span<const uint8_t> bytes = {};  // the file's bytes (fewer if it shrank while read)
};

class BlockFileReader {
 public:
  static constexpr size_t kAlignment = 4096;

  explicit BlockFileReader(KvReadMode mode) : mode_(mode) {}

  KvReadMode mode() const { return mode_; }
  // Reads `path` if it is a regular file of exactly `expected` bytes (a
  // hostile size costs nothing). `bytes` views this reader's buffer until
  // the next read.
  FileRead read(const std::filesystem::path& path, size_t expected);

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  // Grows buf_ to hold n bytes rounded up to kAlignment.
  void reserve(size_t n);
  // Reads [done, want) of fd buffered (pread) into buf_; false on an error.
  bool read_buffered(int fd, size_t want, size_t& done);
  // Reads [done, want) of fd with O_DIRECT set, stopping at the unaligned
  // tail when the file system refuses it there; false on an error.
  bool read_direct(int fd, size_t want, size_t& done);

  KvReadMode mode_;
  std::unique_ptr<uint8_t[], Free> buf_;  // [capacity_] kAlignment-aligned
  size_t capacity_ = 0;
};

}  // namespace kvforge
