#include "app/tools/quantize_plan.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "app/tools/quantize_rules.h"

namespace kvforge {
namespace {

// ggml_n_dims: trailing dimensions of size 1 do not count.
size_t n_dims(const std::vector<uint64_t>& dims) {
  size_t n = dims.size();
  while (n > 1 && dims[n - 1] == 1) --n;
  return n;
}

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// tensor_allows_quantization, for the tensors llama and qwen2 models have.
bool allows_quantization(const QuantTensor& t) {
  if (n_dims(t.dims) < 2) return false;
  return ends_with(t.name, "weight") && t.name.find("_norm.weight") == std::string::npos &&
         t.name.find("ffn_gate_inp.weight") == std::string::npos;
}

int layer_of(const std::string& name) {
  int layer = -1;
  std::sscanf(name.c_str(), "blk.%d.", &layer);
  return layer;
}

// llama-quantize's tensor order (llama_model_loader's weight_name_comparer): by layer,
// tensors outside the layers first, then by name. The mixture rules count in this order.
std::vector<size_t> llama_order(std::span<const QuantTensor> tensors) {
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int la = layer_of(tensors[a].name), lb = layer_of(tensors[b].name);
    return la != lb ? la < lb : tensors[a].name < tensors[b].name;
  });
  return order;
}

MixtureContext mixture_context(const QuantModelFacts& facts, std::span<const QuantTensor> tensors,
                               const QuantRecipe& recipe) {
  if (facts.arch != "llama" && facts.arch != "qwen2")
    throw std::invalid_argument("the " + recipe.name +
                                " mixture's rules are implemented for llama and qwen2 models, "
                                "not '" +
                                facts.arch + "' (use a single type)");
  if (facts.n_expert > 1)
    throw std::invalid_argument("the " + recipe.name + " mixture's rules for models with " +
                                std::to_string(facts.n_expert) +
                                " experts are not implemented (use a single type)");
  MixtureContext ctx{.ftype = recipe.ftype, .base = recipe.base};
  ctx.tied_output = std::none_of(tensors.begin(), tensors.end(),
                                 [](const QuantTensor& t) { return t.name == "output.weight"; });
  ctx.n_gqa = facts.n_head_kv > 0 ? facts.n_head / facts.n_head_kv : 0;
  ctx.is_70b = facts.n_layer == 80 && (facts.arch == "qwen2" ||
                                       (facts.arch == "llama" && facts.n_head != facts.n_head_kv));
  return ctx;
}

// A head count, which a file may store per layer (an array, as Gemma 4's
// may): the first layer's, as llama-quantize's n_gqa() reads it.
uint32_t first_layer_count(const gguf::GgufFile& file, const std::string& key, uint32_t fallback) {
  const gguf::Value* v = file.find(key);
  if (!v) return fallback;
  if (!v->is_array()) return file.get_u32(key);
  const std::vector<gguf::Value>& items = std::get<gguf::Array>(v->data).items;
  const uint64_t* first = items.empty() ? nullptr : std::get_if<uint64_t>(&items[0].data);
  if (!first || *first > UINT32_MAX)
    throw std::invalid_argument(file.name() + ": " + key +
                                ": per-layer array of non-negative integers expected");
  return uint32_t(*first);
}

}  // namespace

QuantModelFacts read_quant_facts(const gguf::GgufFile& file) {
  QuantModelFacts f;
  f.arch = file.get_string("general.architecture");
  f.n_layer = int(file.get_u32(f.arch + ".block_count"));
  f.n_head = int(first_layer_count(file, f.arch + ".attention.head_count", 0));
  f.n_head_kv =
      int(first_layer_count(file, f.arch + ".attention.head_count_kv", uint32_t(f.n_head)));
  f.n_expert = int(file.get_u32_or(f.arch + ".expert_count", 0));
  return f;
}

std::vector<QuantTensor> read_quant_tensors(const gguf::GgufFile& file) {
  std::vector<QuantTensor> out;
  for (const gguf::TensorInfo& t : file.tensors()) out.push_back({t.name, t.dims, t.type});
  return out;
}

std::vector<PlannedTensor> plan_quantization(const QuantModelFacts& facts,
                                             std::span<const QuantTensor> tensors,
                                             const QuantRecipe& recipe) {
  const bool rules = !recipe.pure && is_quantized_type(recipe.base);
  MixtureContext ctx{.ftype = recipe.ftype, .base = recipe.base};
  if (rules) ctx = mixture_context(facts, tensors, recipe);
  const auto is_attn_v = [](TensorCategory c) {
    return c == TensorCategory::AttnV || c == TensorCategory::AttnQkv;
  };
  int n_attn_v = 0;
  for (const QuantTensor& t : tensors) n_attn_v += is_attn_v(tensor_category(t.name));
  int i_attn_v = 0, i_ffn_down = 0;

  std::vector<PlannedTensor> plan(tensors.size());
  for (size_t i : llama_order(tensors)) {
    const QuantTensor& t = tensors[i];
    PlannedTensor& p = plan[i];
    p = {t.name, t.type, t.type, false, false};
    if (!allows_quantization(t)) continue;
    GgmlType wanted = recipe.base;
    if (rules) {
      const TensorCategory c = tensor_category(t.name);
      TensorRank rank;
      if (is_attn_v(c)) rank = {i_attn_v++, n_attn_v};
      if (c == TensorCategory::FfnDown) rank = {i_ffn_down++, facts.n_layer};
      wanted = mixture_type(ctx, c, rank, t.dims[0]);
    }
    p.to = is_quantized_type(wanted) ? fallback_type(wanted, t.dims[0]) : wanted;
    p.quantized = true;
    p.fell_back = p.to != wanted;
  }
  return plan;
}

}  // namespace kvforge
