// A vector whose slots are recycled: the free list every event loop here keeps for its flows, messages, requests and
// calendar buckets, spelled once. Indices stay valid while the pool grows (callers hold indices, not references, across
// an acquire); a released slot is handed out again last-in first-out, so the order of slots, and with it every result
// that depends on it, is a function of the calls alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace railyard {

/// `Container` is std::vector<T> by default; a std::deque<T> keeps slots in place as the pool grows, for callers that
/// hand out pointers into a slot.
template <class T, class Index = std::uint32_t, class Container = std::vector<T>>
class SlotPool {
public:
  /// The index of a slot to use: the last one released, as that caller left it (the caller resets what it must, and
  /// may keep what it wants, such as a generation counter), or else a new, value-initialised one.
  Index acquire()
  {
    if (!free_.empty()) {
      const Index i = free_.back();
      free_.pop_back();
      return i;
    }
    items_.emplace_back();
    return static_cast<Index>(items_.size() - 1);
  }
  /// Slot `i` may be handed out again; its contents stay until then.
  void release(Index i) { free_.push_back(i); }

  T& operator[](Index i) { return items_[i]; }
  const T& operator[](Index i) const { return items_[i]; }
  /// As operator[], checked: std::out_of_range for an index never handed out.
  const T& at(Index i) const { return items_.at(i); }
  /// Slots ever created, in use or released.
  [[nodiscard]] std::size_t size() const { return items_.size(); }
  [[nodiscard]] std::size_t released() const { return free_.size(); }
  void reserve(std::size_t n) { items_.reserve(n); }
  /// Every slot ever created, released ones included (their contents are the last user's).
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

private:
  Container items_;
  std::vector<Index> free_;
};

} // namespace railyard
