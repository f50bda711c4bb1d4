// SelectionMap: loom's TensorSelectionMap — named lists of tensor selections — stored compactly.
//
// An operation's or application's inputs and outputs:
//
//   "inputs": {"tensors": [{"tensorId": "…", "range": {…}}, {…}], "mask": [{…}]}
//
// The interface matches NamedLists (named_lists.h): `append`, `list(name)`, `entries()`, sorted by
// (name, position). The storage differs, because a million applications hold four million
// selections: each map is one vector of int64 words, an entry being
//
//   [name id | position] [tensor id | rank] [start coords …] [end coords …]
//
// (names interned in a process-wide table, see names.h) — 48 bytes for a rank-2 selection where
// a std::string plus a zspace::Range would take 176. The words of a map of one rank-2 selection
// live inside the map (small_words.h): a unary shard's two maps allocate nothing. Reading an
// element builds the TensorSelection value on the fly (no allocation for ranks up to
// zspace::kInlineRank), so `list(name)[i]` and the entries are returned by value:
//
//   SelectionMap in;
//   in.append("tensors", {x, zr0});
//   in.append("tensors", {y, zr1});
//   in.append("mask", {m, zr2});
//   in.list("tensors").size() == 2;   in.list("tensors")[1].tensor == y
//   for (const auto& e : in.entries()) e.name, e.position, e.value   // mask/0, tensors/0,
//   tensors/1
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/ir/ids.h"
#include "tapestry/ir/small_words.h"
#include "tapestry/zspace/range.h"

namespace tapestry::ir {

/// A box of one tensor: `{"tensorId": ..., "range": {...}}`.
struct TensorSelection {
  TensorId tensor;  // invalid when the reference in the file did not resolve
  zspace::Range range;

  friend bool operator==(const TensorSelection&, const TensorSelection&) = default;
};

class SelectionMap {
 public:
  /// One element of one named list (a value; `name` refers to the interned name).
  struct Entry {
    const std::string& name;
    std::uint32_t position;
    TensorSelection value;
  };

  /// Walks the packed entries from a word offset.
  class EntryIterator {
   public:
    using value_type = Entry;
    using difference_type = std::ptrdiff_t;
    EntryIterator() = default;
    EntryIterator(const std::int64_t* at) : at_(at) {}
    Entry operator*() const;
    EntryIterator& operator++();
    EntryIterator operator++(int) {
      EntryIterator c = *this;
      ++*this;
      return c;
    }
    friend bool operator==(EntryIterator, EntryIterator) = default;
    /// Position of this entry's first word (for SelectionMap's own bookkeeping).
    [[nodiscard]] const std::int64_t* word() const { return at_; }

   private:
    const std::int64_t* at_ = nullptr;
  };

  /// A run of entries [begin, end) with its length.
  class EntryRange {
   public:
    EntryRange() = default;
    EntryRange(EntryIterator b, EntryIterator e, std::size_t n) : begin_(b), end_(e), size_(n) {}
    [[nodiscard]] EntryIterator begin() const { return begin_; }
    [[nodiscard]] EntryIterator end() const { return end_; }
    [[nodiscard]] std::size_t size() const { return size_; }
    [[nodiscard]] bool empty() const { return size_ == 0; }

   private:
    EntryIterator begin_, end_;
    std::size_t size_ = 0;
  };

  /// The selections of one named list, in order (a view; invalidated by append).
  class List {
   public:
    List() = default;
    explicit List(EntryRange entries) : entries_(entries) {}
    [[nodiscard]] std::size_t size() const { return entries_.size(); }
    [[nodiscard]] bool empty() const { return entries_.empty(); }
    /// Element i (0 <= i < size()).
    TensorSelection operator[](std::size_t i) const;

    class iterator {
     public:
      using value_type = TensorSelection;
      using difference_type = std::ptrdiff_t;
      iterator() = default;
      explicit iterator(EntryIterator e) : e_(e) {}
      TensorSelection operator*() const { return (*e_).value; }
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
      EntryIterator e_;
    };
    [[nodiscard]] iterator begin() const { return iterator(entries_.begin()); }
    [[nodiscard]] iterator end() const { return iterator(entries_.end()); }

   private:
    EntryRange entries_;
  };

  SelectionMap() = default;

  /// Appends `selection` at the end of the list `name` (creating the list).
  void append(std::string_view name, const TensorSelection& selection);
  /// The same from raw corners (the reader's fast path): ranks must be equal and start <= end,
  /// which the caller has checked.
  void append(std::string_view name, TensorId tensor, std::span<const std::int64_t> start,
              std::span<const std::int64_t> end);
  /// Reserves room for `words` packed words (2 + 2·rank per selection).
  void reserve_words(std::size_t words) { words_.reserve(words); }
  /// The list called `name`; empty when there is none.
  [[nodiscard]] List list(std::string_view name) const;
  [[nodiscard]] bool has(std::string_view name) const { return !list(name).empty(); }
  /// Every entry, sorted by (name, position).
  [[nodiscard]] EntryRange entries() const;
  /// The distinct names, sorted.
  [[nodiscard]] std::vector<std::string_view> names() const;
  /// Total number of selections over all lists.
  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  void clear() {
    words_.clear();
    size_ = 0;
    last_ = 0;
  }

  /// A packed entry seen without building a Range: for hot loops over millions of selections.
  struct RawEntry {
    std::uint32_t name_id;  // see names.h
    std::uint32_t position;
    TensorId tensor;
    std::span<const std::int64_t> start;
    std::span<const std::int64_t> end;
  };
  /// fn(const RawEntry&) for every entry, in order; stops early when fn returns false.
  template <typename Fn>
  void for_each_raw(Fn&& fn) const {
    for (std::size_t w = 0; w < words_.size();) {
      const std::int64_t* at = &words_[w];
      auto rank = static_cast<std::size_t>(static_cast<std::uint64_t>(at[1]) >> 32);
      RawEntry e{static_cast<std::uint32_t>(static_cast<std::uint64_t>(at[0])),
                 static_cast<std::uint32_t>(static_cast<std::uint64_t>(at[0]) >> 32),
                 TensorId(NodeId(static_cast<std::uint32_t>(static_cast<std::uint64_t>(at[1])))),
                 {at + 2, rank},
                 {at + 2 + rank, rank}};
      if (!fn(e)) return;
      w += 2 + 2 * rank;
    }
  }

  /// Rewrites the boxes in place, keeping names, positions, tensors and ranks: fn(i, start,
  /// end) for the i-th entry (in entries() order), with mutable spans of its corners. The caller
  /// keeps start <= end.
  template <typename Fn>
  void for_each_box(Fn&& fn) {
    std::size_t i = 0;
    for (std::size_t w = 0; w < words_.size(); ++i) {
      const auto rank = static_cast<std::size_t>(static_cast<std::uint64_t>(words_[w + 1]) >> 32);
      fn(i, std::span<std::int64_t>(&words_[w + 2], rank),
         std::span<std::int64_t>(&words_[w + 2 + rank], rank));
      w += 2 + 2 * rank;
    }
  }

  /// Rewrites tensor ids in place: fn(name, position, TensorId&) for every entry.
  template <typename Fn>
  void for_each_tensor(Fn&& fn) {
    for (std::size_t w = 0; w < words_.size(); w += entry_words(w)) {
      TensorId id = tensor_at(w);
      fn(name_at(w), position_at(w), id);
      set_tensor_at(w, id);
    }
  }

  friend bool operator==(const SelectionMap& a, const SelectionMap& b) {
    return a.words_ == b.words_;
  }

 private:
  [[nodiscard]] std::size_t entry_words(std::size_t w) const;
  [[nodiscard]] const std::string& name_at(std::size_t w) const;
  [[nodiscard]] std::uint32_t position_at(std::size_t w) const;
  [[nodiscard]] TensorId tensor_at(std::size_t w) const;
  void set_tensor_at(std::size_t w, TensorId id);

  SmallWords words_;  // one rank-2 selection fits inline
  std::uint32_t size_ = 0;
  std::uint32_t last_ = 0;  // word offset of the last entry in sorted order
};

}  // namespace tapestry::ir
