#include "engine/kv/kv_layer_groups.h"

#include <algorithm>
#include <climits>
#include <map>
#include <stdexcept>
#include <string>

namespace kvforge {

std::vector<int32_t> KvLayerGroups::windows() const {
  std::vector<int32_t> w;
  for (const KvLayerGroup& g : groups) w.push_back(g.window);
  return w;
}

bool KvLayerGroups::any_window() const {
  return std::any_of(groups.begin(), groups.end(),
                     [](const KvLayerGroup& g) { return g.window > 0; });
}

KvLayerGroups KvLayerGroups::of(const ModelConfig& config) {
  const size_t n = size_t(std::max(config.n_layer, 0));
  std::vector<int32_t> windows(n);
  std::vector<int64_t> widths(n);
  for (int l = 0; l < config.n_layer; ++l) {
    windows[size_t(l)] = config.owns_kv(l) ? config.window(l) : kNoKv;
    widths[size_t(l)] = config.layer_kv_dim(l);
  }
  return of_windows(windows, widths);
}

namespace {

// Each window's layers, full attention (0) first, checked.
std::map<int32_t, std::vector<int>> layers_by_window(const std::vector<int32_t>& layer_windows) {
  std::map<int32_t, std::vector<int>> by_window;
  for (size_t l = 0; l < layer_windows.size(); ++l) {
    if (layer_windows[l] == KvLayerGroups::kNoKv) continue;
    if (layer_windows[l] < 0)
      throw std::invalid_argument("KvLayerGroups: layer " + std::to_string(l) + " has window " +
                                  std::to_string(layer_windows[l]));
    by_window[layer_windows[l]].push_back(int(l));
  }
  if (by_window.empty())
    throw std::invalid_argument("KvLayerGroups: the model has no attention layer (all recurrent)");
  return by_window;
}

}  // namespace

KvLayerGroups KvLayerGroups::of_windows(const std::vector<int32_t>& layer_windows,
                                        const std::vector<int64_t>& layer_widths) {
  if (layer_windows.empty()) throw std::invalid_argument("KvLayerGroups: the model has no layers");
  if (!layer_widths.empty() && layer_widths.size() != layer_windows.size())
    throw std::invalid_argument("KvLayerGroups: " + std::to_string(layer_widths.size()) +
                                " widths for " + std::to_string(layer_windows.size()) + " layers");
  const auto width = [&](int l) { return layer_widths.empty() ? 1 : layer_widths[size_t(l)]; };
  const std::map<int32_t, std::vector<int>> by_window = layers_by_window(layer_windows);
  KvLayerGroups g;
  g.capacity = INT64_MAX;
  int64_t widest = 0;
  for (const auto& [window, layers] : by_window) {
    int64_t total = 0;
    for (int l : layers) total += width(l), widest = std::max(widest, width(l));
    g.capacity = std::min(g.capacity, total);
  }
  g.capacity = std::max(g.capacity, widest);
  g.group_of_layer.assign(layer_windows.size(), -1);
  g.slot_of_layer.assign(layer_windows.size(), -1);
  for (const auto& [window, layers] : by_window) {
    int64_t filled = g.capacity;  // a full group: the first layer opens one
    for (int l : layers) {
      if (filled + width(l) > g.capacity) {
        g.groups.push_back(KvLayerGroup{window, {}});
        filled = 0;
      }
      KvLayerGroup& group = g.groups.back();
      g.group_of_layer[size_t(l)] = int(g.groups.size() - 1);
      g.slot_of_layer[size_t(l)] = int(group.layers.size());
      group.layers.push_back(l);
      filled += width(l);
      g.slots = std::max(g.slots, int(group.layers.size()));
    }
  }
  return g;
}

}  // namespace kvforge
