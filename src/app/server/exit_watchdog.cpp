#include "app/server/exit_watchdog.h"

#include <cstdio>
#include <cstdlib>
#include <thread>

namespace kvforge::server {

void start_exit_watchdog(std::chrono::milliseconds grace) {
  std::thread([grace] {
    std::this_thread::sleep_for(grace);
    std::fprintf(stderr, "kvforge serve: still busy %.1f s after the stop signal; exiting now\n",
                 static_cast<double>(grace.count()) / 1000);
    std::fflush(stderr);
    std::_Exit(143);
  }).detach();
}

}  // namespace kvforge::server
