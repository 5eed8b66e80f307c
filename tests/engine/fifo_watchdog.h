// Frees a reader blocked on a FIFO, so that a test of code that must never
// open one fails instead of hanging: after `patience`, and every 100 ms
// from then on, it opens each FIFO for writing and closes it again (a
// reader blocked in open() wakes up and reads end of file) and notes that
// it had to.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

namespace kvforge::testing {

class FifoWatchdog {
 public:
  FifoWatchdog(std::vector<std::filesystem::path> fifos, std::chrono::milliseconds patience)
      : fifos_(std::move(fifos)), thread_([this, patience] { run(patience); }) {}
  ~FifoWatchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  FifoWatchdog(const FifoWatchdog&) = delete;
  FifoWatchdog& operator=(const FifoWatchdog&) = delete;

  // Whether a reader was found blocked on one of the FIFOs.
  bool fired() const {
    std::lock_guard<std::mutex> lock(mu_);
    return fired_;
  }

 private:
  void run(std::chrono::milliseconds patience) {
    std::unique_lock<std::mutex> lock(mu_);
    if (wake_.wait_for(lock, patience, [&] { return stop_; })) return;
    do {
      for (const auto& f : fifos_) {
        // Succeeds only while a reader has it open: then that reader was stuck.
        const int fd = ::open(f.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0) {
          fired_ = true;
          ::close(fd);
        }
      }
    } while (!wake_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stop_; }));
  }

  std::vector<std::filesystem::path> fifos_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool fired_ = false;
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace kvforge::testing
