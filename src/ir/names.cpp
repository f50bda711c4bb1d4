// The process-wide name table (names.h).
//
// Strings live in fixed-size chunks that are never moved or freed, published through an array
// of atomic chunk pointers, so interned_name() reads without a lock. intern_name() takes a
// mutex only on a miss in its per-thread cache of recent names.
#include "tapestry/ir/names.h"

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "tapestry/support/error.h"

namespace tapestry::ir {

namespace {

constexpr std::uint32_t kChunkSize = 4096;
constexpr std::uint32_t kMaxChunks = 16384;  // 64 M names

struct NameTable {
  std::mutex mutex;
  std::array<std::atomic<std::string*>, kMaxChunks> chunks{};
  std::unordered_map<std::string_view, std::uint32_t> ids;  // views into the chunks
  std::uint32_t size = 0;

  std::uint32_t intern(std::string_view name) {
    std::lock_guard lock(mutex);
    if (auto it = ids.find(name); it != ids.end()) return it->second;
    std::uint32_t id = size;
    std::uint32_t chunk = id / kChunkSize;
    if (chunk >= kMaxChunks) throw Error("too many distinct port names");
    std::string* block = chunks[chunk].load(std::memory_order_acquire);
    if (block == nullptr) {
      block = new std::string[kChunkSize];  // never freed: names live as long as the process
      chunks[chunk].store(block, std::memory_order_release);
    }
    block[id % kChunkSize] = std::string(name);
    ids.emplace(block[id % kChunkSize], id);
    ++size;
    return id;
  }
};

NameTable& table() {
  static NameTable* t = new NameTable();  // intentionally leaked: used until exit
  return *t;
}

struct RecentName {
  const std::string* name = nullptr;
  std::uint32_t id = 0;
};

}  // namespace

std::uint32_t intern_name(std::string_view name) {
  thread_local std::array<RecentName, 8> recent{};
  thread_local std::uint32_t next = 0;
  for (const RecentName& r : recent) {
    if (r.name != nullptr && *r.name == name) return r.id;
  }
  std::uint32_t id = table().intern(name);
  recent[next++ % recent.size()] = RecentName{&interned_name(id), id};
  return id;
}

const std::string& interned_name(std::uint32_t id) {
  std::string* block = table().chunks[id / kChunkSize].load(std::memory_order_acquire);
  return block[id % kChunkSize];
}

}  // namespace tapestry::ir
