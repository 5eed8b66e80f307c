// The budget of one template render: every render may do a bounded amount of
// work and allocate a bounded number of bytes, so a hostile template (one in
// a downloaded GGUF, or --chat-template) or hostile template inputs fail with
// an error instead of eating the CPU or the memory of the process.
//
// Work is counted in units: one per element touched inside a filter, test or
// operator (a list compared, searched, sorted, printed...), one per 16 bytes
// built, and kStepUnits per loop iteration, macro call or output statement.
// Bytes are the bytes of every string and list a render builds, counted
// cumulatively (never given back), so they bound the render's peak memory.
//
// The renderer installs a budget for the thread it runs on (BudgetScope);
// the builtins charge it through charge_work() / charge_bytes(), which throw
// TemplateBudgetExceeded past a limit and RenderAbandoned once `abandoned`
// says the caller no longer wants the result (asked every kCheckUnits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace kvforge::jinja {

class Value;

struct RenderLimits {
  size_t max_output_bytes = 8u << 20;
  // Well above what the real templates of ../shared/testdata/chat-templates
  // need with tools and the longest conversation their models take (a
  // 512 KiB message: tests/app/chat/chat_budget_test.cpp checks the margin), and
  // small enough that a render that exhausts either ends within a small
  // fraction of the 2 s a request may take, on a core several times slower
  // than a current one. They are sized on the costliest unit (a loop
  // iteration's share, an element through a filter's callback, a sort
  // comparison) and the costliest byte (escaped text written into fresh
  // pages), not on the average one.
  int64_t max_work = 10'000'000;
  size_t max_alloc_bytes = 64u << 20;
  int max_call_depth = 32;  // nested macro calls
  // Statements and expressions evaluated one inside the other, macro calls
  // included: bounds the renderer's stack (each level is a few frames of
  // eval/exec_node), whatever mix of blocks, expressions and macros.
  int max_eval_depth = 1024;
  // Asked every kCheckUnits of work; true = stop (the client went away, the
  // server is shutting down). Empty = never.
  std::function<bool()> abandoned;
};

// What a render used, for measurements and tests.
struct RenderUsage {
  int64_t work = 0;
  size_t bytes = 0;
};

class RenderBudget {
 public:
  static constexpr int64_t kStepUnits = 64;
  static constexpr int64_t kBytesPerUnit = 16;
  static constexpr int64_t kCheckUnits = 1 << 16;

  explicit RenderBudget(const RenderLimits& limits) : limits_(limits) {}

  void work(int64_t units, int line);
  void bytes(size_t n, int line);
  RenderUsage usage() const { return {work_, bytes_}; }

 private:
  const RenderLimits& limits_;
  int64_t work_ = 0;
  size_t bytes_ = 0;
  int64_t next_check_ = kCheckUnits;
};

// Makes `budget` the one charge_*() uses on this thread while it lives.
class BudgetScope {
 public:
  explicit BudgetScope(RenderBudget& budget);
  ~BudgetScope();
  BudgetScope(const BudgetScope&) = delete;
  BudgetScope& operator=(const BudgetScope&) = delete;

 private:
  RenderBudget* previous_;
};

// Charge the current thread's budget; no-ops outside a render. `line` is the
// template line for the error message (0 when unknown).
void charge_work(int64_t units, int line = 0);
void charge_bytes(size_t n, int line = 0);
// The bytes copying `v` allocates: a string's bytes; a list's or dict's
// element slots plus the bytes of the strings held directly in them (nested
// containers are shared, not copied). Touches each element once.
size_t copy_bytes(const Value& v);

}  // namespace kvforge::jinja
