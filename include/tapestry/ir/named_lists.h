// NamedLists<T>: loom's "map from a name to a list" (TensorSelectionMap, IPFMap).
//
// An operation's inputs are named lists of tensor selections; its IPF signature has the same
// structure with index projections in place of selections:
//
//   "inputs": {"tensors": [sel0, sel1], "mask": [sel2]}
//
// NamedLists stores the entries flat, sorted by (name, position), in one vector: that keeps a
// million applications' selection maps to one allocation each, and makes iteration and JSON
// output deterministic (names in byte order, positions in order).
//
//   SelectionMap in;
//   in.append("tensors", {x, zr0});
//   in.append("tensors", {y, zr1});
//   in.append("mask", {m, zr2});
//   in.list("tensors").size() == 2;  in.list("tensors")[1].tensor == y
//   for (const auto& e : in.entries()) ...   // ("mask",0,…) ("tensors",0,…) ("tensors",1,…)
//
// Names must be identifiers `[a-zA-Z_][a-zA-Z0-9_]*` (the loom schema's pattern); `append`
// does not check that (the reader and the body-schema constraint do), so building code stays
// cheap.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tapestry::ir {

template <typename T>
class NamedLists {
 public:
  /// One element of one named list.
  struct Entry {
    std::string name;
    std::uint32_t position = 0;  // index inside its list
    T value;

    friend bool operator==(const Entry&, const Entry&) = default;
  };

  /// The values of one named list, in order (a view; invalidated by append).
  class List {
   public:
    List() = default;
    explicit List(std::span<const Entry> entries) : entries_(entries) {}
    [[nodiscard]] std::size_t size() const { return entries_.size(); }
    [[nodiscard]] bool empty() const { return entries_.empty(); }
    const T& operator[](std::size_t i) const { return entries_[i].value; }

    class iterator {
     public:
      using value_type = T;
      using difference_type = std::ptrdiff_t;
      iterator() = default;
      explicit iterator(const Entry* e) : e_(e) {}
      const T& operator*() const { return e_->value; }
      const T* operator->() const { return &e_->value; }
      iterator& operator++() {
        ++e_;
        return *this;
      }
      iterator operator++(int) {
        iterator c = *this;
        ++e_;
        return c;
      }
      friend bool operator==(iterator, iterator) = default;

     private:
      const Entry* e_ = nullptr;
    };
    [[nodiscard]] iterator begin() const { return iterator(entries_.data()); }
    [[nodiscard]] iterator end() const { return iterator(entries_.data() + entries_.size()); }

   private:
    std::span<const Entry> entries_;
  };

  NamedLists() = default;

  /// Appends `value` at the end of the list `name` (creating the list).
  void append(std::string_view name, T value) {
    auto it = std::upper_bound(entries_.begin(), entries_.end(), name,
                               [](std::string_view n, const Entry& e) { return n < e.name; });
    std::uint32_t position = 0;
    if (it != entries_.begin() && std::prev(it)->name == name) {
      position = std::prev(it)->position + 1;
    }
    entries_.insert(it, Entry{std::string(name), position, std::move(value)});
  }

  /// Reserves room for `n` entries in total.
  void reserve(std::size_t n) { entries_.reserve(n); }
  /// Removes every entry (keeping the capacity).
  void clear() { entries_.clear(); }

  /// The list called `name`; empty when there is none.
  [[nodiscard]] List list(std::string_view name) const {
    auto [lo, hi] = std::equal_range(entries_.begin(), entries_.end(), name, Less{});
    return List(std::span<const Entry>(entries_.data() + (lo - entries_.begin()),
                                       static_cast<std::size_t>(hi - lo)));
  }
  [[nodiscard]] bool has(std::string_view name) const { return !list(name).empty(); }

  /// Every entry, sorted by (name, position).
  [[nodiscard]] const std::vector<Entry>& entries() const { return entries_; }
  /// Mutable access to the values (names and positions stay fixed): fn(name, position, value&).
  void for_each_entry(auto&& fn) {
    for (Entry& e : entries_) fn(std::as_const(e.name), e.position, e.value);
  }
  /// The distinct names, sorted.
  [[nodiscard]] std::vector<std::string_view> names() const {
    std::vector<std::string_view> out;
    for (const Entry& e : entries_) {
      if (out.empty() || out.back() != e.name) out.push_back(e.name);
    }
    return out;
  }
  /// Total number of entries over all lists.
  [[nodiscard]] std::size_t size() const { return entries_.size(); }
  [[nodiscard]] bool empty() const { return entries_.empty(); }

  friend bool operator==(const NamedLists&, const NamedLists&) = default;

 private:
  struct Less {
    bool operator()(const Entry& e, std::string_view n) const { return e.name < n; }
    bool operator()(std::string_view n, const Entry& e) const { return n < e.name; }
  };
  std::vector<Entry> entries_;
};

}  // namespace tapestry::ir
