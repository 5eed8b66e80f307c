// A progress line on stderr while a model loads, as llama.cpp logs its load:
// nothing for a load shorter than `after` seconds, else "loading NAME
// (SIZE)... P % (N s)" each second and "loaded NAME (SIZE) in X s" at the
// end, so a multi-gigabyte file does not look like a hang. P is the fraction
// the load reports (Model::load's progress: the weights regrouped for the
// kernels); until it reports one, the line shows the time spent only.
#pragma once

#include <functional>
#include <string>

namespace kvforge::cli {

// What the load calls with the fraction done (0..1), from its own thread.
using LoadReport = std::function<void(double fraction)>;

// Runs `load` on the calling thread, handing it a LoadReport; a watcher
// thread draws the line. Exceptions from `load` pass through (the line is
// ended first).
void with_load_progress(const std::string& what, double after_seconds,
                        const std::function<void(const LoadReport&)>& load);

}  // namespace kvforge::cli
