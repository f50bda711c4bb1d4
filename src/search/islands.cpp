#include "tapestry/search/islands.h"

#include <algorithm>

#include "tapestry/support/assert.h"

namespace tapestry::search {

namespace {

std::uint64_t splitmix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

std::uint64_t island_seed(std::uint64_t seed, std::uint32_t rank) {
  return rank == 0 ? seed : splitmix(splitmix(seed) ^ (rank * 0xd1b54a32d192ed03ull));
}

std::uint64_t island_share(std::uint64_t total, std::uint32_t rank, std::uint32_t ranks) {
  TAPESTRY_ASSERT(ranks > 0 && rank < ranks, "rank out of range");
  return total / ranks + (rank < total % ranks ? 1 : 0);
}

// One rank's end: a post goes to every rank's inbox; collect takes the oldest of each.
class ThreadIslands::Link final : public IslandLink {
 public:
  Link(Shared& shared, std::uint32_t rank) : shared_(shared), rank_(rank) {}
  [[nodiscard]] std::uint32_t rank() const override { return rank_; }
  [[nodiscard]] std::uint32_t ranks() const override { return shared_.ranks; }
  void post(const std::string& text) override {
    const std::lock_guard lock(shared_.mutex);
    for (auto& inbox : shared_.inbox) inbox[rank_].push_back(text);
    shared_.posted.notify_all();
  }
  std::vector<std::string> collect() override {
    std::unique_lock lock(shared_.mutex);
    auto& mine = shared_.inbox[rank_];
    shared_.posted.wait(lock, [&] {
      return std::all_of(mine.begin(), mine.end(), [](const auto& q) { return !q.empty(); });
    });
    std::vector<std::string> out;
    for (auto& q : mine) {
      out.push_back(std::move(q.front()));
      q.pop_front();
    }
    return out;
  }

 private:
  Shared& shared_;
  std::uint32_t rank_;
};

ThreadIslands::ThreadIslands(std::uint32_t ranks) {
  TAPESTRY_ASSERT(ranks > 0, "no islands");
  shared_.ranks = ranks;
  shared_.inbox.assign(ranks, std::vector<std::deque<std::string>>(ranks));
  for (std::uint32_t r = 0; r < ranks; ++r) links_.push_back(std::make_unique<Link>(shared_, r));
}

ThreadIslands::~ThreadIslands() = default;

IslandLink& ThreadIslands::link(std::uint32_t rank) {
  return *links_.at(rank);
}

}  // namespace tapestry::search
