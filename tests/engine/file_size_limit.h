// A full disk for the test's own process: while a FileSizeLimit lives, files
// cannot grow past `bytes` (writes beyond fail with EFBIG; SIGXFSZ, which
// would end the process, is ignored). The limit and the signal's handler are
// put back when it goes.
#pragma once

#include <sys/resource.h>

#include <csignal>

namespace kvforge::testing {

class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    if (::getrlimit(RLIMIT_FSIZE, &old_) != 0) return;
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit small = old_;
    small.rlim_cur = bytes;
    applied_ = ::setrlimit(RLIMIT_FSIZE, &small) == 0;
  }
  ~FileSizeLimit() {
    if (!applied_) return;
    ::setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

  bool applied() const { return applied_; }

 private:
  rlimit old_{};
  void (*old_handler_)(int) = SIG_DFL;
  bool applied_ = false;
};

}  // namespace kvforge::testing
