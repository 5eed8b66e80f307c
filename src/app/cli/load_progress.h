// A progress line on stderr while a model loads, as llama.cpp logs its load:
// nothing for a load shorter than `after` seconds, else "loading NAME
// (SIZE)... N s" each second and "loaded NAME (SIZE) in X s" at the end, so
// a multi-gigabyte file does not look like a hang. The load itself reports
// no fraction done (the weights are mapped, then regrouped), so the line
// shows the time spent rather than a percentage.
#pragma once

#include <functional>
#include <string>

namespace kvforge::cli {

// Runs `load` on the calling thread; a watcher thread draws the line.
// Exceptions from `load` pass through (the line is ended first).
void with_load_progress(const std::string& what, double after_seconds,
                        const std::function<void()>& load);

}  // namespace kvforge::cli
