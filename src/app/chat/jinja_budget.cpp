#include "app/chat/jinja_budget.h"

#include <string>

#include "app/chat/jinja_error.h"
#include "app/chat/jinja_value.h"

namespace kvforge::jinja {
namespace {

thread_local RenderBudget* current_budget = nullptr;

}  // namespace

void RenderBudget::work(int64_t units, int line) {
  work_ += units;
  if (work_ > limits_.max_work)
    throw TemplateBudgetExceeded(line, "template exceeded its work budget of " +
                                           std::to_string(limits_.max_work) +
                                           " units (loop iterations, elements touched, bytes "
                                           "built)");
  if (work_ >= next_check_) {
    next_check_ = work_ + kCheckUnits;
    if (limits_.abandoned && limits_.abandoned()) throw RenderAbandoned();
  }
}

void RenderBudget::bytes(size_t n, int line) {
  // Saturating: n may be a product computed before anything is built.
  bytes_ = n > limits_.max_alloc_bytes - std::min(bytes_, limits_.max_alloc_bytes)
               ? limits_.max_alloc_bytes + 1
               : bytes_ + n;
  if (bytes_ > limits_.max_alloc_bytes)
    throw TemplateBudgetExceeded(line, "template exceeded its memory budget of " +
                                           std::to_string(limits_.max_alloc_bytes) +
                                           " bytes built");
  work(static_cast<int64_t>(n / kBytesPerUnit), line);
}

BudgetScope::BudgetScope(RenderBudget& budget) : previous_(current_budget) {
  current_budget = &budget;
}

BudgetScope::~BudgetScope() { current_budget = previous_; }

void charge_work(int64_t units, int line) {
  if (current_budget) current_budget->work(units, line);
}

void charge_bytes(size_t n, int line) {
  if (current_budget) current_budget->bytes(n, line);
}

size_t copy_bytes(const Value& v) {
  auto direct = [](const Value& e) {
    return sizeof(Value) + (e.is_string() ? e.as_string().size() : 0);
  };
  size_t n = 0;
  if (v.is_string()) {
    n = v.as_string().size();
  } else if (v.is_array()) {
    for (const Value& e : v.as_array()) n += direct(e);
  } else if (v.is_object()) {
    for (const auto& [k, e] : v.as_object()) n += k.size() + sizeof(std::string) + direct(e);
  }
  return n;
}

}  // namespace kvforge::jinja
