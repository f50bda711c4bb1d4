// InlineVector<T, N>: a fixed-after-construction array with N elements of inline storage.
//
// The zspace value types (Point, the rows of AffineMap) are small: real index spaces have rank
// <= 6. Keeping them inline means that applying an index projection to a range allocates
// nothing (bench/zspace_bench checks this). Larger sizes spill to the heap transparently.
//
// It is deliberately minimal: construction with a size, element access, iteration, copy/move.
// There is no push_back: zspace values are built whole and then treated as immutable.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <span>
#include <type_traits>

namespace tapestry::zspace {

template <typename T, std::size_t N>
class InlineVector {
 public:
  InlineVector() = default;
  /// `size` value-initialised elements.
  explicit InlineVector(std::size_t size) {
    resize_uninitialised(size);
    std::fill_n(data(), size, T{});
  }
  InlineVector(std::size_t size, const T& value) {
    resize_uninitialised(size);
    std::fill_n(data(), size, value);
  }
  InlineVector(std::initializer_list<T> values)
      : InlineVector(std::span<const T>(values.begin(), values.size())) {}
  explicit InlineVector(std::span<const T> values) {
    resize_uninitialised(values.size());
    if constexpr (std::is_trivially_copyable_v<T>) {
      if (!heap_) {  // a loop of fixed length: no call to memmove for a few elements
        for (std::size_t i = 0; i < N; ++i) {
          if (i < values.size()) inline_[i] = values[i];
        }
        return;
      }
    }
    std::copy(values.begin(), values.end(), data());
  }

  InlineVector(const InlineVector& other) { *this = other; }
  InlineVector(InlineVector&& other) noexcept { *this = std::move(other); }
  InlineVector& operator=(const InlineVector& other) {
    if (this == &other) return *this;
    if (other.heap_) {
      resize_uninitialised(other.size_);
      std::copy(other.data(), other.data() + other.size_, data());
    } else {
      heap_.reset();
      copy_inline(other);
    }
    size_ = other.size_;
    return *this;
  }
  InlineVector& operator=(InlineVector&& other) noexcept {
    if (this == &other) return *this;
    if (other.heap_) {
      heap_ = std::move(other.heap_);
    } else {
      heap_.reset();
      copy_inline(other);
    }
    size_ = other.size_;
    other.size_ = 0;
    return *this;
  }
  ~InlineVector() = default;

  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  [[nodiscard]] T* data() { return heap_ ? heap_.get() : inline_; }
  [[nodiscard]] const T* data() const { return heap_ ? heap_.get() : inline_; }
  T& operator[](std::size_t i) { return data()[i]; }
  const T& operator[](std::size_t i) const { return data()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  [[nodiscard]] std::span<const T> span() const { return {data(), size_}; }
  [[nodiscard]] std::span<T> span() { return {data(), size_}; }
  /// True when the elements live on the heap (size > N).
  [[nodiscard]] bool is_spilled() const { return heap_ != nullptr; }

  friend bool operator==(const InlineVector& a, const InlineVector& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  // Copies other's inline elements: all N of them when that is a fixed-size copy (no call to
  // memmove for a size known only at run time — the copies of Points and Ranges are hot).
  void copy_inline(const InlineVector& other) {
    if constexpr (std::is_trivially_copyable_v<T>) {
      std::memcpy(inline_, other.inline_, sizeof inline_);  // fixed size: inlined, no call
    } else {
      std::copy(other.inline_, other.inline_ + other.size_, inline_);
    }
  }

  // Sets the size; contents are unspecified afterwards. Allocates only when size > N.
  void resize_uninitialised(std::size_t size) {
    if (size > N) {
      if (!heap_ || size > size_) heap_ = std::make_unique<T[]>(size);
    } else {
      heap_.reset();
    }
    size_ = size;
  }

  T inline_[N]{};
  std::unique_ptr<T[]> heap_;
  std::size_t size_ = 0;
};

}  // namespace tapestry::zspace
