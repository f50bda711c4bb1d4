// SelectionMap: the packed layout (selection_map.h).
//
// Entry at word w:  words[w] = name id (low 32 bits) | position (high 32 bits)
//                   words[w+1] = tensor index (low 32 bits) | rank (high 32 bits)
//                   words[w+2 .. w+2+rank) = start, then rank words of end.
#include "tapestry/ir/selection_map.h"

#include <algorithm>

#include "tapestry/ir/names.h"
#include "tapestry/support/assert.h"

namespace tapestry::ir {

namespace {

std::uint32_t low(std::int64_t w) {
  return static_cast<std::uint32_t>(static_cast<std::uint64_t>(w));
}
std::uint32_t high(std::int64_t w) {
  return static_cast<std::uint32_t>(static_cast<std::uint64_t>(w) >> 32);
}
std::int64_t pack(std::uint32_t lo, std::uint32_t hi) {
  return static_cast<std::int64_t>((static_cast<std::uint64_t>(hi) << 32) | lo);
}
std::size_t words_of(const std::int64_t* at) {
  return 2 + 2 * static_cast<std::size_t>(high(at[1]));
}

SelectionMap::Entry entry_at(const std::int64_t* at) {
  std::size_t rank = high(at[1]);
  zspace::Point start(std::span<const std::int64_t>(at + 2, rank));
  zspace::Point end(std::span<const std::int64_t>(at + 2 + rank, rank));
  return SelectionMap::Entry{interned_name(low(at[0])), high(at[0]),
                             TensorSelection{TensorId(NodeId(low(at[1]))),
                                             zspace::Range(std::move(start), std::move(end))}};
}

}  // namespace

SelectionMap::Entry SelectionMap::EntryIterator::operator*() const {
  return entry_at(at_);
}

SelectionMap::EntryIterator& SelectionMap::EntryIterator::operator++() {
  at_ += words_of(at_);
  return *this;
}

TensorSelection SelectionMap::List::operator[](std::size_t i) const {
  TAPESTRY_ASSERT(i < size(), "selection list index out of range");
  EntryIterator it = entries_.begin();
  for (std::size_t k = 0; k < i; ++k) ++it;
  return (*it).value;
}

std::size_t SelectionMap::entry_words(std::size_t w) const {
  return words_of(&words_[w]);
}
const std::string& SelectionMap::name_at(std::size_t w) const {
  return interned_name(low(words_[w]));
}
std::uint32_t SelectionMap::position_at(std::size_t w) const {
  return high(words_[w]);
}
TensorId SelectionMap::tensor_at(std::size_t w) const {
  return TensorId(NodeId(low(words_[w + 1])));
}
void SelectionMap::set_tensor_at(std::size_t w, TensorId id) {
  words_[w + 1] = pack(id.index(), high(words_[w + 1]));
}

void SelectionMap::append(std::string_view name, const TensorSelection& selection) {
  append(name, selection.tensor, selection.range.start().coords(), selection.range.end().coords());
}

// Entries stay sorted by (name, position). The usual case — names arriving in order — appends at
// the end after one comparison with the last entry; otherwise a linear scan finds the place
// (maps are small).
void SelectionMap::append(std::string_view name, TensorId tensor,
                          std::span<const std::int64_t> start, std::span<const std::int64_t> end) {
  TAPESTRY_ASSERT(start.size() == end.size(), "selection start and end ranks differ");
  std::uint32_t id = intern_name(name);
  std::size_t insert_at = words_.size();
  std::uint32_t position = 0;
  if (!words_.empty() && low(words_[last_]) == id) {
    position = high(words_[last_]) + 1;
  } else if (!words_.empty() && !(name_at(last_) < name)) {
    insert_at = 0;
    for (std::size_t w = 0; w < words_.size(); w += entry_words(w)) {
      const std::string& n = name_at(w);
      if (n > name) break;
      if (n == name) position = position_at(w) + 1;
      insert_at = w + entry_words(w);
    }
  }
  std::size_t rank = start.size();
  std::size_t size = 2 + 2 * rank;
  bool at_end = insert_at == words_.size();
  words_.insert_zeros(insert_at, size);
  std::int64_t* at = &words_[insert_at];
  at[0] = pack(id, position);
  at[1] = pack(tensor.index(), static_cast<std::uint32_t>(rank));
  std::copy(start.begin(), start.end(), at + 2);
  std::copy(end.begin(), end.end(), at + 2 + rank);
  if (at_end) {
    last_ = static_cast<std::uint32_t>(insert_at);
  } else {
    last_ += static_cast<std::uint32_t>(size);
  }
  ++size_;
}

SelectionMap::EntryRange SelectionMap::entries() const {
  const std::int64_t* begin = words_.data();
  return EntryRange(EntryIterator(begin), EntryIterator(begin + words_.size()), size_);
}

SelectionMap::List SelectionMap::list(std::string_view name) const {
  const std::int64_t* first = nullptr;
  std::size_t count = 0;
  for (std::size_t w = 0; w < words_.size(); w += entry_words(w)) {
    const std::string& n = name_at(w);
    if (n == name) {
      if (first == nullptr) first = &words_[w];
      ++count;
    } else if (n > name) {
      break;
    }
  }
  if (first == nullptr) return List();
  const std::int64_t* last = first;
  for (std::size_t k = 0; k < count; ++k) last += words_of(last);
  return List(EntryRange(EntryIterator(first), EntryIterator(last), count));
}

std::vector<std::string_view> SelectionMap::names() const {
  std::vector<std::string_view> out;
  for (std::size_t w = 0; w < words_.size(); w += entry_words(w)) {
    const std::string& n = name_at(w);
    if (out.empty() || out.back() != n) out.push_back(n);
  }
  return out;
}

}  // namespace tapestry::ir
