// The merge loop BPE and SentencePiece share: the word starts as a linked
// list of symbols (one per character), and the best adjacent pair merges
// into its left symbol, again and again, until no adjacent pair can merge.
// The encoders differ only in what a pair is worth and what a merge writes.
#pragma once

#include <cstdint>
#include <optional>
#include <queue>
#include <vector>

namespace kvforge {

// Symbol: has `prev` and `next`, the indices linking the live symbols (-1 at
// the ends). Candidate: has `left` and `right`, the indices of the pair.
// Order: the priority_queue comparator, whose top merges first.
// candidate(left, right) -> std::optional<Candidate> for two adjacent live symbols;
// is_stale(top): either side changed since `top` was queued;
// merge(top) folds symbols[top.right] into symbols[top.left] (the links are updated here).
template <class Candidate, class Order, class Symbol, class MakeCandidate, class IsStale,
          class Merge>
void merge_best_pairs(std::vector<Symbol>& symbols, MakeCandidate candidate, IsStale is_stale,
                      Merge merge) {
  std::priority_queue<Candidate, std::vector<Candidate>, Order> queue;
  const auto consider = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    if (const std::optional<Candidate> c = candidate(left, right)) queue.push(*c);
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) consider(i, i + 1);

  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.left];
    Symbol& right = symbols[top.right];
    if (left.next != top.right || is_stale(top)) continue;
    merge(top);
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.left;
    consider(left.prev, top.left);
    consider(top.left, left.next);
  }
}

}  // namespace kvforge
