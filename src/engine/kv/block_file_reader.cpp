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

// Our files are made by renaming a fresh temporary: one name, no other
// link to a file elsewhere.
bool regular_of_size(const struct stat& st, size_t expected) {
  return S_ISREG(st.st_mode) && st.st_nlink == 1 && uint64_t(st.st_size) == expected;
}

FileRead refused() {
  FileRead r;
  r.status = FileRead::kRefused;
  return r;
}

// A failed lstat, open or read. Errors that say this entry is not a file we
// may read (a link under O_NOFOLLOW, a socket, a file of another owner)
// refuse the entry; the others (EIO, out of descriptors or memory) are
// faults of the disk or the process.
FileRead failed(int err) {
  if (err == ELOOP || err == ENXIO || err == EACCES || err == EPERM || err == EISDIR ||
      err == ENODEV || err == ETXTBSY || err == EWOULDBLOCK || err == EOVERFLOW)
    return refused();
  FileRead r;
  r.status = err == ENOENT ? FileRead::kMissing : FileRead::kError;
  r.error = err;
  return r;
}

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

bool BlockFileReader::read_direct(int fd, size_t want, size_t& done) {
  // Whole aligned chunks; a short read is the end of the file.
  const size_t aligned = round_up(want, kAlignment);
  while (done < want) {
    const ssize_t n = ::pread(fd, buf_.get() + done, aligned - done, off_t(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EINVAL) break;  // the tail: finished buffered
    if (n < 0) return false;
    done += size_t(n);
    if (n == 0 || size_t(n) % kAlignment != 0) break;
  }
  if (done >= want) return true;
  // The same descriptor without O_DIRECT: reopening by name could reach
  // another file.
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags & ~O_DIRECT) == 0;
}

FileRead BlockFileReader::read(const std::filesystem::path& path, size_t expected) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return failed(errno);
  if (!regular_of_size(st, expected)) return refused();
  // O_NONBLOCK: a FIFO swapped in after lstat opens without waiting for a
  // writer (fstat then refuses it); a regular file's reads ignore the flag.
  const int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
  bool direct = mode_ == KvReadMode::kDirect;
  Fd f;
  f.reset(::open(path.c_str(), flags | (direct ? O_DIRECT : 0)));
  if (f.fd < 0 && direct && errno == EINVAL) {  // no O_DIRECT on this file system
    direct = false;
    f.reset(::open(path.c_str(), flags));
  }
  if (f.fd < 0) return failed(errno);
  if (::fstat(f.fd, &st) != 0) return failed(errno);
  if (!regular_of_size(st, expected)) return refused();
  size_t done = 0;
  reserve(expected);
  if ((direct && !read_direct(f.fd, expected, done)) ||
      (done < expected && !read_buffered(f.fd, expected, done)))
    return failed(errno);
  FileRead r;
  r.status = FileRead::kOk;
  r.bytes = std::span<const uint8_t>(buf_.get(), std::min(done, expected));
  return r;
}

}  // namespace kvforge
