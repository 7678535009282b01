// A size-bounded map that evicts its least recently used entries: the runtime's caches of
// executables and pipelines, which a long-running process would otherwise grow without end.
#pragma once

#include <cstddef>
#include <list>
#include <unordered_map>
#include <utility>
#include <vector>

namespace nxv::runtime {

// Not synchronised: its owner guards it with its own mutex. Values are shared_ptrs in
// practice, so that evicting one drops only the cache's reference and whoever still holds
// it keeps it alive.
template <class Key, class Value>
class LruCache {
 public:
  explicit LruCache(size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}

  // The value under `key`, now the most recently used; null when absent.
  const Value* find(const Key& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->second;
  }
  // As find, leaving the order as it is.
  const Value* peek(const Key& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &it->second->second;
  }
  // Stores `value` under `key` (keeping the value already there, if any) as the most recently
  // used, and returns what is stored. The entries evicted to stay within the capacity are
  // moved into `evicted`, for the caller to release after it lets go of its lock.
  const Value& insert(const Key& key, Value value, std::vector<Value>& evicted) {
    if (const Value* v = find(key)) return *v;
    order_.emplace_front(key, std::move(value));
    index_.emplace(key, order_.begin());
    while (order_.size() > capacity_) {
      evicted.push_back(std::move(order_.back().second));
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    return order_.front().second;
  }
  size_t size() const { return order_.size(); }
  size_t capacity() const { return capacity_; }
  // Moves every value into `evicted`.
  void clear(std::vector<Value>& evicted) {
    for (auto& [key, value] : order_) evicted.push_back(std::move(value));
    order_.clear();
    index_.clear();
  }

 private:
  size_t capacity_;
  std::list<std::pair<Key, Value>> order_;  // most recently used first
  std::unordered_map<Key, typename std::list<std::pair<Key, Value>>::iterator> index_;
};

}  // namespace nxv::runtime
