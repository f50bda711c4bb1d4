// SmallWords: a growable array of int64 words that keeps up to kInline of them inside the
// object — the storage of a SelectionMap (selection_map.h).
//
// One rank-2 selection packs into 6 words, and a million applications of a unary operation hold
// two maps of one selection each. Kept inline, such a map costs no allocation: a 48-byte heap
// block costs 64 with malloc's header, a pointer, and a cache miss to reach it. Larger maps move
// to the heap, growing geometrically; a copy takes exactly the room it needs.
//
//   SmallWords w;            // inline, capacity 6
//   w.insert_zeros(0, 6);    // still inline
//   w.insert_zeros(2, 2);    // 8 words: on the heap now; the 2 new zeros sit at words 2 and 3
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "tapestry/support/assert.h"

namespace tapestry::ir {

class SmallWords {
 public:
  /// Words kept inside the object: one rank-2 selection.
  static constexpr std::uint32_t kInline = 6;

  SmallWords() = default;
  SmallWords(const SmallWords& other) { copy_from(other); }
  SmallWords(SmallWords&& other) noexcept { take(other); }
  SmallWords& operator=(const SmallWords& other) {
    if (this != &other) {
      size_ = 0;
      copy_from(other);
    }
    return *this;
  }
  SmallWords& operator=(SmallWords&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  ~SmallWords() { release(); }

  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  [[nodiscard]] std::int64_t* data() { return on_heap() ? heap_ : inline_; }
  [[nodiscard]] const std::int64_t* data() const { return on_heap() ? heap_ : inline_; }
  std::int64_t& operator[](std::size_t i) { return data()[i]; }
  const std::int64_t& operator[](std::size_t i) const { return data()[i]; }
  /// Removes every word (keeps the room).
  void clear() { size_ = 0; }

  /// Room for `words` words in all.
  void reserve(std::size_t words) {
    if (words <= capacity_) return;
    TAPESTRY_ASSERT(words < 0xffffffffu, "selection map too large");
    const auto capacity = static_cast<std::uint32_t>(
        std::max<std::size_t>(words, std::min<std::size_t>(2ull * capacity_, 0xfffffffeu)));
    auto* grown = new std::int64_t[capacity];
    std::copy_n(data(), size_, grown);
    if (on_heap()) delete[] heap_;
    heap_ = grown;
    capacity_ = capacity;
  }

  /// Inserts `count` zero words before word `at` (at <= size()).
  void insert_zeros(std::size_t at, std::size_t count) {
    TAPESTRY_ASSERT(at <= size_, "insert position past the end");
    reserve(size_ + count);
    std::int64_t* words = data();
    std::copy_backward(words + at, words + size_, words + size_ + count);
    std::fill_n(words + at, count, 0);
    size_ += static_cast<std::uint32_t>(count);
  }

  friend bool operator==(const SmallWords& a, const SmallWords& b) {
    return std::equal(a.data(), a.data() + a.size_, b.data(), b.data() + b.size_);
  }

 private:
  [[nodiscard]] bool on_heap() const { return capacity_ > kInline; }

  // Appends other's words to this empty object.
  void copy_from(const SmallWords& other) {
    reserve(other.size_);
    std::copy_n(other.data(), other.size_, data());
    size_ = other.size_;
  }
  // Takes other's words (and heap block); leaves it empty and inline.
  void take(SmallWords& other) {
    if (other.on_heap()) {
      heap_ = other.heap_;
      capacity_ = other.capacity_;
      other.capacity_ = kInline;
    } else {
      std::copy_n(other.inline_, other.size_, inline_);
    }
    size_ = other.size_;
    other.size_ = 0;
  }
  void release() {
    if (on_heap()) delete[] heap_;
    capacity_ = kInline;
    size_ = 0;
  }

  union {
    std::int64_t inline_[kInline];
    std::int64_t* heap_;
  };
  std::uint32_t size_ = 0;
  std::uint32_t capacity_ = kInline;  // above kInline: the words are in heap_
};

}  // namespace tapestry::ir
