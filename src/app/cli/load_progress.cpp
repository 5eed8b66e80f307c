#include "app/cli/load_progress.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "app/cli/progress_line.h"

namespace kvforge::cli {
namespace {

// The watcher's side: waits `after` seconds, then ticks once a second until `done`.
class LoadWatcher {
 public:
  LoadWatcher(std::string what, double after) : what_(std::move(what)), after_(after) {
    thread_ = std::thread([this] { watch(); });
  }
  void report(double fraction) { fraction_.store(fraction, std::memory_order_relaxed); }
  ~LoadWatcher() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

 private:
  using Clock = std::chrono::steady_clock;

  void watch() {
    const Clock::time_point start = Clock::now();
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, std::chrono::duration<double>(after_), [this] { return done_; })) return;
    ProgressLine line(0.0);
    while (!done_) {
      const double fraction = fraction_.load(std::memory_order_relaxed);
      if (fraction >= 0)
        line.update("loading %s... %3.0f %% (%.0f s)", what_.c_str(), 100.0 * fraction,
                    seconds_since(start));
      else
        line.update("loading %s... %.0f s", what_.c_str(), seconds_since(start));
      cv_.wait_for(lock, std::chrono::seconds(1), [this] { return done_; });
    }
    line.update("loaded %s in %.1f s", what_.c_str(), seconds_since(start));
    line.finish();
  }
  static double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  }

  const std::string what_;
  const double after_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::atomic<double> fraction_{-1.0};  // what the load reported; < 0: nothing yet
  std::thread thread_;
};

}  // namespace

void with_load_progress(const std::string& what, double after_seconds,
                        const std::function<void(const LoadReport&)>& load) {
  LoadWatcher watcher(what, after_seconds);
  load([&watcher](double fraction) { watcher.report(fraction); });
}

}  // namespace kvforge::cli
