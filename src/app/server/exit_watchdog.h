// A bound on how long `kvforge serve` takes to exit once asked to: whatever
// is still running after `grace` (a generation step that will not end, a
// client cpp-httplib still waits for), the process ends with status 143
// (terminated), after saying so on stderr.
#pragma once

#include <chrono>

namespace kvforge::server {

void start_exit_watchdog(std::chrono::milliseconds grace);

}  // namespace kvforge::server
