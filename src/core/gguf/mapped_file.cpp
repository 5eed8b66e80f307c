#include "core/gguf/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/gguf/gguf_file.h"

namespace kvforge::gguf {
namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const char* action, int err) {
  throw GgufError(path.string() + ": cannot " + action + ": " + std::strerror(err));
}

// Closes the descriptor on every path out of the constructor.
struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, "open", errno);
  FdCloser closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(path, "stat", errno);
  if (!S_ISREG(st.st_mode)) throw GgufError(path.string() + ": not a regular file");
  if (st.st_size == 0) return;
  void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) fail(path, "mmap", errno);
  data_ = static_cast<const uint8_t*>(p);
  size_ = static_cast<size_t>(st.st_size);
}

void MappedFile::release(std::span<const uint8_t> range) const {
  if (range.empty()) return;
  if (range.data() < data_ || range.data() + range.size() > data_ + size_)
    throw std::invalid_argument("MappedFile::release: the range is not inside the mapping");
  const auto page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (uintptr_t(range.data()) + page - 1) / page * page,
                  end = (uintptr_t(range.data() + range.size())) / page * page;
  // Advice only: if the kernel declines, the pages simply stay resident.
  if (begin < end) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    unmap();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() { unmap(); }

void MappedFile::unmap() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace kvforge::gguf
