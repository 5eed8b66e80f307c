#include "engine/kv/kv_layer_groups.h"

#include <algorithm>
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
  std::vector<int32_t> windows(size_t(std::max(config.n_layer, 0)));
  for (int l = 0; l < config.n_layer; ++l)
    windows[size_t(l)] = config.owns_kv(l) ? config.window(l) : kNoKv;
  return of_windows(windows);
}

KvLayerGroups KvLayerGroups::of_windows(const std::vector<int32_t>& layer_windows) {
  if (layer_windows.empty()) throw std::invalid_argument("KvLayerGroups: the model has no layers");
  std::map<int32_t, std::vector<int>> by_window;  // ascending: full attention (0) first
  for (size_t l = 0; l < layer_windows.size(); ++l) {
    if (layer_windows[l] == kNoKv) continue;
    if (layer_windows[l] < 0)
      throw std::invalid_argument("KvLayerGroups: layer " + std::to_string(l) + " has window " +
                                  std::to_string(layer_windows[l]));
    by_window[layer_windows[l]].push_back(int(l));
  }
  if (by_window.empty())
    throw std::invalid_argument("KvLayerGroups: the model has no attention layer (all recurrent)");
  KvLayerGroups g;
  g.slots = int(layer_windows.size());
  for (const auto& [window, layers] : by_window) g.slots = std::min(g.slots, int(layers.size()));
  g.group_of_layer.assign(layer_windows.size(), -1);
  g.slot_of_layer.assign(layer_windows.size(), -1);
  for (const auto& [window, layers] : by_window)
    for (size_t i = 0; i < layers.size(); i += size_t(g.slots)) {
      KvLayerGroup group;
      group.window = window;
      for (size_t j = i; j < std::min(layers.size(), i + size_t(g.slots)); ++j) {
        g.group_of_layer[size_t(layers[j])] = int(g.groups.size());
        g.slot_of_layer[size_t(layers[j])] = int(j - i);
        group.layers.push_back(layers[j]);
      }
      g.groups.push_back(std::move(group));
    }
  return g;
}

}  // namespace kvforge
