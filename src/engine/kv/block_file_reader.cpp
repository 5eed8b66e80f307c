#include "engine/kv/block_file_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <new>

namespace kvforge {
namespace {

size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// Closes the descriptor it holds when it goes out of scope.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  void reset(int f) {
    if (fd >= 0) ::close(fd);
    fd = f;
  }
};

}  // namespace

void BlockFileReader::reserve(size_t n) {
  const size_t want = round_up(std::max<size_t>(n, 1), kAlignment);
  if (want <= capacity_) return;
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(kAlignment, want));
  if (!p) throw std::bad_alloc();
  buf_.reset(p);
  capacity_ = want;
}

bool BlockFileReader::read_buffered(int fd, size_t want, size_t& done) {
  while (done < want) {
    const ssize_t n = ::pread(fd, buf_.get() + done, want - done, off_t(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;  // the file shrank meanwhile: the decoder calls it truncated
    done += size_t(n);
  }
  return true;
}

FileRead BlockFileReader::read(const std::filesystem::path& path, size_t limit) {
  FileRead r;
  Fd f;
  bool direct = mode_ == KvReadMode::kDirect;
  f.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0)));
  if (f.fd < 0 && direct && errno == EINVAL) {  // no O_DIRECT on this file system
    direct = false;
    f.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  }
  if (f.fd < 0) {
    r.status = errno == ENOENT ? FileRead::kMissing : FileRead::kError;
    r.error = errno;
    return r;
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) {
    r.error = errno;
    return r;
  }
  const size_t want = std::min(size_t(st.st_size), limit);
  size_t done = 0;
  reserve(want);
  if (direct) {
    // Whole aligned chunks; a short read is the end of the file.
    const size_t aligned = round_up(want, kAlignment);
    while (done < want) {
      const ssize_t n = ::pread(f.fd, buf_.get() + done, aligned - done, off_t(done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EINVAL) break;  // the tail: finished buffered below
      if (n < 0) {
        r.error = errno;
        return r;
      }
      done += size_t(n);
      if (n == 0 || size_t(n) % kAlignment != 0) break;
    }
    if (done < want) {
      f.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
      if (f.fd < 0) {
        r.status = errno == ENOENT ? FileRead::kMissing : FileRead::kError;
        r.error = errno;
        return r;
      }
    }
  }
  if (done < want && !read_buffered(f.fd, want, done)) {
    r.error = errno;
    return r;
  }
  r.status = FileRead::kOk;
  r.bytes = std::span<const uint8_t>(buf_.get(), std::min(done, want));
  return r;
}

}  // namespace kvforge
