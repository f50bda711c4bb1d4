// KeyIndex: an open-addressing hash index from string keys to dense uint32 ids.
//
// The Graph stores node keys contiguously in one character buffer; the index keeps only
// (hash, id) pairs — 8 bytes a slot — and asks its caller for the key of an id when a probe
// needs to compare. That keeps a million-node graph's key lookup to a few tens of megabytes and
// free of per-key allocations (an std::unordered_map<std::string, …> costs ~5x more).
//
//   KeyIndex index;
//   auto key_of = [&](std::uint32_t id) { return std::string_view(keys[id]); };
//   index.insert("a", 0, key_of);
//   index.find("a", key_of) == 0;   index.find("b", key_of) == std::nullopt
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace tapestry::ir {

class KeyIndex {
 public:
  /// A 64-bit multiply-xorshift hash over 8-byte words, folded to 32 bits; never 0 (0 marks an
  /// empty slot). Keys are mostly 36-character UUIDs: five words.
  static std::uint32_t hash(std::string_view key) {
    std::uint64_t h = 0x9e3779b97f4a7c15ull ^ key.size();
    std::size_t i = 0;
    for (; i + 8 <= key.size(); i += 8) {
      std::uint64_t w;
      std::memcpy(&w, key.data() + i, 8);
      h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
      h ^= h >> 31;
    }
    std::uint64_t tail = 0;
    std::memcpy(&tail, key.data() + i, key.size() - i);
    h = (h ^ tail) * 0x94d049bb133111ebull;
    h ^= h >> 29;
    auto folded = static_cast<std::uint32_t>(h ^ (h >> 32));
    return folded == 0 ? 1 : folded;
  }

  /// Room for `n` keys without rehashing.
  void reserve(std::size_t n) {
    if (n * 2 > slots_.size()) rehash(capacity_for(n));
  }

  /// The id stored for `key`.
  template <typename KeyOf>
  [[nodiscard]] std::optional<std::uint32_t> find(std::string_view key, KeyOf&& key_of) const {
    return find_hashed(key, hash(key), key_of);
  }

  /// find() with the hash already computed.
  template <typename KeyOf>
  [[nodiscard]] std::optional<std::uint32_t> find_hashed(std::string_view key, std::uint32_t h,
                                                         KeyOf&& key_of) const {
    if (slots_.empty()) return std::nullopt;
    std::size_t mask = slots_.size() - 1;
    for (std::size_t i = h & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.hash == 0) return std::nullopt;
      if (s.hash == h && key_of(s.id) == key) return s.id;
    }
  }

  /// Inserts `key → id`; returns the existing id instead when the key is present.
  template <typename KeyOf>
  std::optional<std::uint32_t> insert(std::string_view key, std::uint32_t id, KeyOf&& key_of) {
    if ((size_ + 1) * 2 > slots_.size()) rehash(capacity_for(size_ + 1));
    std::uint32_t h = hash(key);
    std::size_t mask = slots_.size() - 1;
    for (std::size_t i = h & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.hash == 0) {
        s = Slot{h, id};
        ++size_;
        return std::nullopt;
      }
      if (s.hash == h && key_of(s.id) == key) return s.id;
    }
  }

  /// Starts loading the slot `key` hashes to into the cache (a hint for a later insert/find:
  /// the reader issues it when it sees a node's id and inserts after parsing the body).
  void prefetch(std::uint32_t h) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[h & (slots_.size() - 1)]);
  }

  [[nodiscard]] std::size_t size() const { return size_; }
  void clear() {
    slots_.clear();
    size_ = 0;
  }

 private:
  struct Slot {
    std::uint32_t hash = 0;
    std::uint32_t id = 0;
  };

  static std::size_t capacity_for(std::size_t n) {
    std::size_t cap = 16;
    while (cap < n * 2) cap *= 2;
    return cap;
  }

  void rehash(std::size_t capacity) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(capacity, Slot{});
    std::size_t mask = capacity - 1;
    for (const Slot& s : old) {
      if (s.hash == 0) continue;
      std::size_t i = s.hash & mask;
      while (slots_[i].hash != 0) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
};

}  // namespace tapestry::ir
