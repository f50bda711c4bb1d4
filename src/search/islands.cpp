#include "tapestry/search/islands.h"

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

// One rank's end: every call is one phase of the shared exchange — each rank leaves its text, the
// last to arrive publishes all of them, and each reads them before it can arrive at the next.
class ThreadIslands::Link final : public IslandLink {
 public:
  Link(Shared& shared, std::uint32_t rank) : shared_(shared), rank_(rank) {}
  [[nodiscard]] std::uint32_t rank() const override { return rank_; }
  [[nodiscard]] std::uint32_t ranks() const override { return shared_.ranks; }
  std::vector<std::string> gather(const std::string& text) override {
    std::vector<std::string> all = exchange(text);
    if (rank_ != 0) all.clear();
    return all;
  }
  std::string broadcast(const std::string& text) override { return exchange(text).at(0); }

 private:
  std::vector<std::string> exchange(const std::string& text) {
    std::unique_lock lock(shared_.mutex);
    const std::uint64_t round = shared_.round;
    shared_.texts[rank_] = text;
    if (++shared_.arrived == shared_.ranks) {
      shared_.result = shared_.texts;
      shared_.arrived = 0;
      ++shared_.round;
      shared_.changed.notify_all();
    } else {
      shared_.changed.wait(lock, [&] { return shared_.round != round; });
    }
    return shared_.result;
  }

  Shared& shared_;
  std::uint32_t rank_;
};

ThreadIslands::ThreadIslands(std::uint32_t ranks) {
  TAPESTRY_ASSERT(ranks > 0, "no islands");
  shared_.ranks = ranks;
  shared_.texts.resize(ranks);
  for (std::uint32_t r = 0; r < ranks; ++r) links_.push_back(std::make_unique<Link>(shared_, r));
}

ThreadIslands::~ThreadIslands() = default;

IslandLink& ThreadIslands::link(std::uint32_t rank) {
  return *links_.at(rank);
}

}  // namespace tapestry::search
