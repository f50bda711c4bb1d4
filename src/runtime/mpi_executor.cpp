// The MPI executor (mpi_executor.h): a rank's part of a block program, with its messages.
#include "tapestry/runtime/mpi_executor.h"

#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include "block_run.h"
#include "kernels/kernel_support.h"
#include "rank_program.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/memory_budget.h"
#include "tapestry/support/assert.h"
#include "tapestry/zspace/format.h"

namespace tapestry::runtime {

namespace {

// Tags: two reserved for control, message i travels with tag kFirstMessageTag + i.
constexpr int kAbortTag = 1;  // zero bytes: "I failed, stop"
constexpr int kAgreeTag = 2;  // the failing rank's message, to rank 0
constexpr int kFirstMessageTag = 3;

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  std::string text(MPI_MAX_ERROR_STRING, '\0');
  int length = 0;
  MPI_Error_string(rc, text.data(), &length);
  text.resize(static_cast<std::size_t>(length));
  throw Error(fmt::format("MPI: {} failed: {}", what, text));
}

int byte_count(std::int64_t bytes, std::string_view what) {
  if (bytes > std::numeric_limits<int>::max()) {
    throw Error(
        fmt::format("{} is {} bytes; one MPI message holds at most 2 GiB (split the "
                    "operation further)",
                    what, bytes));
  }
  return static_cast<int>(bytes);
}

// TAPESTRY_TEST_MPI_FAIL=R makes rank R's first application throw; R:setup makes its executor's
// construction throw. Tests only.
struct InjectedFailure {
  bool in_run = false;
  bool in_setup = false;
};

InjectedFailure injected_failure(std::uint32_t rank) {
  const char* value = std::getenv("TAPESTRY_TEST_MPI_FAIL");
  if (value == nullptr) return {};
  const std::string text(value);
  const std::string mine = std::to_string(rank);
  return {.in_run = text == mine, .in_setup = text == mine + ":setup"};
}

// The element offset of `box` in a dense row-major buffer over `range` when its cells are one
// contiguous run of it (every dim after the first partial one whole, every dim before it one
// wide), else nullopt.
std::optional<std::int64_t> contiguous_offset(const Range& range, const Range& box) {
  if (box.is_empty() || !range.contains(box)) return std::nullopt;
  std::size_t d = 0;
  while (d < box.rank() && box.shape()[d] == 1) ++d;
  for (std::size_t k = d + 1; k < box.rank(); ++k) {
    if (box.start()[k] != range.start()[k] || box.end()[k] != range.end()[k]) return std::nullopt;
  }
  return element_offset(range, dense_strides(range.shape()), box.start());
}

// Whether member `member`'s contribution to `c` can be sent from `range`'s buffer as it is: its
// box, or for a reduce-scatter the box's slices in member order (pack_contribution), one
// contiguous run.
bool contributes_in_place(const detail::RankCollective& c, std::uint32_t member,
                          const Range& range) {
  const Range& box = c.boxes[member];
  if (c.kind != detail::CollectiveKind::kReduceScatter)
    return contiguous_offset(range, box).has_value();
  std::optional<std::int64_t> first = contiguous_offset(range, box);
  if (!first) return false;
  std::int64_t next = *first;
  for (const Range& slice : c.result_boxes) {
    const Range piece(box.start().slice(0, 1).concat(slice.start()),
                      box.end().slice(0, 1).concat(slice.end()));
    const std::optional<std::int64_t> at = contiguous_offset(range, piece);
    if (!at || *at != next) return false;
    next += piece.size();
  }
  return true;
}

}  // namespace

bool mpi_built() {
  return true;
}

// ---- MpiSession ------------------------------------------------------------------------------

// The posts' communicator (its own: no tag of a run's messages can match a post), this rank's
// posts not yet collected, and the sends in flight (a deque: each text stays where MPI_Isend saw
// it until its sends complete).
struct MpiSession::Posts {
  static constexpr int kTag = 1;
  MPI_Comm comm = MPI_COMM_NULL;
  std::deque<std::string> own;
  struct Sent {
    std::string text;
    std::vector<MPI_Request> requests;
  };
  std::deque<Sent> sent;

  // Forgets the sends that completed, oldest first (and so drives MPI's progress).
  void reap() {
    while (!sent.empty()) {
      int done = 0;
      check_mpi(MPI_Testall(static_cast<int>(sent.front().requests.size()),
                            sent.front().requests.data(), &done, MPI_STATUSES_IGNORE),
                "MPI_Testall");
      if (done == 0) return;
      sent.pop_front();
    }
  }
};

MpiSession::MpiSession() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized != 0) throw Error("MPI is already initialised in this process");
  int provided = 0;
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (provided < MPI_THREAD_FUNNELED) {
    throw Error("MPI: the library does not support MPI_THREAD_FUNNELED");
  }
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  rank_ = static_cast<std::uint32_t>(rank);
  size_ = static_cast<std::uint32_t>(size);
  posts_ = std::make_unique<Posts>();
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &posts_->comm), "MPI_Comm_dup");
}

MpiSession::~MpiSession() {
  if (posts_) {
    for (Posts::Sent& s : posts_->sent) {
      MPI_Waitall(static_cast<int>(s.requests.size()), s.requests.data(), MPI_STATUSES_IGNORE);
    }
    MPI_Comm_free(&posts_->comm);
  }
  MPI_Finalize();
}

void MpiSession::post(const std::string& text) {
  posts_->reap();
  posts_->own.push_back(text);
  Posts::Sent& sent = posts_->sent.emplace_back();
  sent.text = text;
  const int length = byte_count(static_cast<std::int64_t>(text.size()), "a post");
  for (std::uint32_t r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(MPI_Isend(sent.text.data(), length, MPI_CHAR, static_cast<int>(r), Posts::kTag,
                        posts_->comm, &request),
              "MPI_Isend");
    sent.requests.push_back(request);
  }
}

std::vector<std::string> MpiSession::collect() {
  if (posts_->own.empty()) throw Error("MPI: collect() before post()");
  std::vector<std::string> out(size_);
  out[rank_] = std::move(posts_->own.front());
  posts_->own.pop_front();
  for (std::uint32_t r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Status status;
    for (;;) {
      int arrived = 0;
      check_mpi(MPI_Iprobe(static_cast<int>(r), Posts::kTag, posts_->comm, &arrived, &status),
                "MPI_Iprobe");
      if (arrived != 0) break;
      posts_->reap();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    int count = 0;
    MPI_Get_count(&status, MPI_CHAR, &count);
    out[r].resize(static_cast<std::size_t>(count));
    check_mpi(MPI_Recv(out[r].data(), count, MPI_CHAR, static_cast<int>(r), Posts::kTag,
                       posts_->comm, MPI_STATUS_IGNORE),
              "MPI_Recv");
  }
  return out;
}

std::optional<RankFailure> MpiSession::agree(const std::optional<std::string>& error) const {
  const int mine = error ? 1 : 0;
  std::vector<int> flags(size_);
  check_mpi(MPI_Allgather(&mine, 1, MPI_INT, flags.data(), 1, MPI_INT, MPI_COMM_WORLD),
            "MPI_Allgather");
  std::uint32_t first = 0;
  while (first < size_ && flags[first] == 0) ++first;
  if (first == size_) return std::nullopt;
  RankFailure failure{.rank = first};
  if (rank_ == first) {
    if (rank_ == 0) {
      failure.message = *error;
    } else {
      check_mpi(MPI_Send(error->data(), static_cast<int>(error->size()), MPI_CHAR, 0, kAgreeTag,
                         MPI_COMM_WORLD),
                "MPI_Send");
    }
  } else if (rank_ == 0) {
    MPI_Status status;
    check_mpi(MPI_Probe(static_cast<int>(first), kAgreeTag, MPI_COMM_WORLD, &status), "MPI_Probe");
    int count = 0;
    MPI_Get_count(&status, MPI_CHAR, &count);
    failure.message.resize(static_cast<std::size_t>(count));
    check_mpi(MPI_Recv(failure.message.data(), count, MPI_CHAR, static_cast<int>(first), kAgreeTag,
                       MPI_COMM_WORLD, MPI_STATUS_IGNORE),
              "MPI_Recv");
  }
  return failure;
}

std::vector<std::string> MpiSession::gather(const std::string& text) const {
  const int length = byte_count(static_cast<std::int64_t>(text.size()), "a gathered report");
  std::vector<int> lengths(size_);
  check_mpi(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD),
            "MPI_Gather");
  std::vector<int> offsets(size_, 0);
  std::string all;
  if (rank_ == 0) {
    std::int64_t total = 0;
    for (std::uint32_t r = 0; r < size_; ++r) {
      offsets[r] = static_cast<int>(total);
      total += lengths[r];
    }
    all.resize(static_cast<std::size_t>(byte_count(total, "the gathered reports")));
  }
  check_mpi(MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                        MPI_CHAR, 0, MPI_COMM_WORLD),
            "MPI_Gatherv");
  std::vector<std::string> out;
  if (rank_ != 0) return out;
  for (std::uint32_t r = 0; r < size_; ++r) {
    out.push_back(
        all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
  }
  return out;
}

std::string MpiSession::broadcast(const std::string& text) const {
  int length = rank_ == 0 ? byte_count(static_cast<std::int64_t>(text.size()), "a broadcast") : 0;
  check_mpi(MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
  std::string out = rank_ == 0 ? text : std::string(static_cast<std::size_t>(length), '\0');
  check_mpi(MPI_Bcast(out.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast");
  return out;
}

void MpiSession::barrier() const {
  check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

// ---- the compiled program ----------------------------------------------------------------------

namespace detail {

struct MpiProgram {
  BlockProgram whole;
  RankProgram rank;
  std::vector<std::string> rank_names;
  std::vector<std::string> message_what;  // "Z[0:50, 0:32]" per message
  // Per message this rank sends: sent from its slot's buffer, which the send holds (one use of
  // the slot) until MPI is done with it — the box is a contiguous run of the buffer's bytes.
  std::vector<char> send_in_place;
  // Per part (rank.parts): the contribution is sent from its source slot's buffer, held likewise.
  std::vector<char> contribute_in_place;
  int threads = 1;
  bool poison = false;
  bool inject_failure = false;
  std::unique_ptr<BufferPool> pool = std::make_unique<BufferPool>();
  // One communicator per collective this rank takes part in (parallel to rank.parts), made at
  // the first run: MPI_Comm_split is collective over every rank, and construction may fail on
  // one rank before the others agree that setup failed.
  mutable std::vector<MPI_Comm> comms;
  mutable bool comms_made = false;

  void make_comms() const {
    if (comms_made) return;
    comms_made = true;
    std::size_t part = 0;
    for (std::uint32_t c = 0; c < rank.collectives.size(); ++c) {
      const bool member = part < rank.parts.size() && rank.parts[part].collective == c;
      MPI_Comm comm = MPI_COMM_NULL;
      check_mpi(MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED,
                               static_cast<int>(rank.rank), &comm),
                "MPI_Comm_split");
      if (member) {
        comms.push_back(comm);
        ++part;
      }
    }
  }
  ~MpiProgram() {
    for (MPI_Comm& comm : comms) MPI_Comm_free(&comm);
  }
  // TBB counts the calling thread as one of its threads; the arena here runs only enqueued
  // tasks (no caller joins it), so it needs `threads` workers of its own.
  std::optional<tbb::global_control> allow;
  mutable std::optional<tbb::task_arena> arena;
};

}  // namespace detail

MpiExecutor::MpiExecutor(const MpiSession& session, const ir::Graph& graph,
                         const RankSchedule& schedule, MpiExecutorOptions options)
    : session_(session), graph_(graph), program_(std::make_unique<detail::MpiProgram>()) {
  detail::MpiProgram& p = *program_;
  if (schedule.ranks() != session.size()) {
    throw Error(fmt::format("the schedule spreads the graph over {} ranks ({}), but the job has {}",
                            schedule.ranks(), fmt::join(schedule.rank_names, ", "),
                            session.size()));
  }
  const InjectedFailure injected = injected_failure(session.rank());
  if (injected.in_setup) {
    throw Error("injected failure (TAPESTRY_TEST_MPI_FAIL) while setting up");
  }
  p.inject_failure = injected.in_run;
  const ExecutableKernels& kernels = options.kernels != nullptr ? *options.kernels : fast_kernels();
  p.whole = detail::compile_block_program(graph, kernels);  // row pieces per rank: rank_program.h
  p.rank =
      detail::compile_rank_program(graph, p.whole, schedule, session.rank(), options.collectives);
  check_memory_budget(p.rank.local.memory, options.memory_limit_bytes);
  // A box sent (or contributed to a reduction) as it lies in its slot's buffer goes from there,
  // the send holding one use of the slot until MPI is done with it, as a device sends from the
  // tensor's memory and the model holds an output until its last transfer has left; other boxes
  // are packed into a staging buffer.
  detail::RankProgram& rp = p.rank;
  p.send_in_place.assign(rp.messages.size(), 0);
  for (const std::vector<std::uint32_t>& sends : rp.sends) {
    for (std::uint32_t m : sends) {
      detail::BufferSlot& slot = rp.local.slots[rp.messages[m].slot];
      if (!contiguous_offset(slot.range, rp.messages[m].box)) continue;
      p.send_in_place[m] = 1;
      ++slot.uses;
    }
  }
  p.contribute_in_place.assign(rp.parts.size(), 0);
  for (std::size_t i = 0; i < rp.parts.size(); ++i) {
    const detail::RankCollective& c = rp.collectives[rp.parts[i].collective];
    detail::BufferSlot& slot = rp.local.slots[c.source_slot];
    if (c.kind == detail::CollectiveKind::kAllgather ||
        !contributes_in_place(c, rp.parts[i].member, slot.range)) {
      continue;
    }
    p.contribute_in_place[i] = 1;
    ++slot.uses;
  }
  const auto tag_ub = [] {
    void* value = nullptr;
    int found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &found);
    return found != 0 ? *static_cast<int*>(value) : 32767;
  }();
  if (p.rank.messages.size() + kFirstMessageTag > static_cast<std::size_t>(tag_ub)) {
    throw Error(fmt::format("the schedule has {} messages; this MPI library tags at most {}",
                            p.rank.messages.size(), tag_ub - kFirstMessageTag));
  }
  for (const detail::RankMessageInfo& m : p.rank.messages) {
    p.message_what.push_back(
        fmt::format("{}{}", tensor_name(graph, p.rank.local.slots[m.slot].tensor), m.box));
    (void)byte_count(m.bytes, fmt::format("the message of {}", p.message_what.back()));
  }
  p.rank_names = schedule.rank_names;
  p.threads = std::max(1, options.threads);
  p.poison = options.poison;
  p.allow.emplace(tbb::global_control::max_allowed_parallelism,
                  static_cast<std::size_t>(p.threads) + 1);
  p.arena.emplace(p.threads, 0);
}

MpiExecutor::~MpiExecutor() = default;

std::vector<NeededInput> MpiExecutor::inputs_needed() const {
  std::vector<NeededInput> out;
  const detail::RankProgram& rp = program_->rank;
  for (std::size_t s = 0; s < rp.needed_inputs.size(); ++s) {
    if (rp.needed_inputs[s] != 0)
      out.push_back({rp.local.slots[s].tensor, rp.local.slots[s].range});
  }
  return out;
}

std::vector<CollectiveRecord> MpiExecutor::collectives() const {
  std::vector<CollectiveRecord> out;
  for (const detail::RankCollective& c : program_->rank.collectives) {
    out.push_back({.kind = std::string(detail::collective_kind_name(c.kind)),
                   .what = c.what,
                   .ranks = c.members,
                   .bytes = c.bytes,
                   .bitwise = c.bitwise});
  }
  return out;
}

std::size_t MpiExecutor::application_count() const {
  return program_->rank.local.tasks.size();
}

std::size_t MpiExecutor::messages_sent() const {
  std::size_t n = 0;
  for (const auto& sends : program_->rank.sends) n += sends.size();
  return n;
}

std::size_t MpiExecutor::messages_received() const {
  std::size_t combined = 0;
  for (const detail::RankCombine& c : program_->rank.combines) {
    for (const detail::RankCombineStep& step : c.steps) combined += step.message != UINT32_MAX;
  }
  return program_->rank.receives.size() + program_->rank.gathered.size() + combined;
}

// ---- a run ------------------------------------------------------------------------------------

namespace {

using detail::Clock;

struct Outgoing {
  std::uint32_t message = 0;  // or the part, for a collective's contribution
  Buffer staging;
  bool collective = false;
  bool in_place = false;   // an all-gather in the tensor's own buffer (gathers_in_place)
  bool from_slot = false;  // sent from its slot's buffer (send_in_place, contribute_in_place)
};

// Whether every box is whole rows of `range` (every dim after the first as `range` has it): a
// contiguous run of bytes in a buffer over `range`.
bool whole_rows(const Range& range, const std::vector<Range>& boxes) {
  for (const Range& box : boxes) {
    if (box.is_empty() || range.rank() == 0 || !range.contains(box)) return false;
    for (std::size_t d = 1; d < range.rank(); ++d) {
      if (box.start()[d] != range.start()[d] || box.end()[d] != range.end()[d]) return false;
    }
  }
  return true;
}

// An all-gather whose members' boxes are whole rows of this rank's buffer of the tensor runs in
// that buffer (MPI_IN_PLACE, each box received at its own offset): no copy of the contribution,
// no buffer of the gathered tensor beside the tensor's own — a device gathers into the tensor.
bool gathers_in_place(const detail::RankCollective& c,
                      const std::vector<detail::BufferSlot>& slots) {
  return c.kind == detail::CollectiveKind::kAllgather &&
         whole_rows(slots[c.source_slot].range, c.boxes);
}

// One collective this rank takes part in, as the communication thread runs it.
struct PartRun {
  MPI_Request request = MPI_REQUEST_NULL;
  bool posted = false;
  bool done = false;
  Buffer send;
  Buffer receive;
  std::vector<int> counts, displacements;  // MPI_Iallgatherv's, in bytes; alive until done
  bool in_place = false;                   // gathered in the tensor's buffer (gathers_in_place)
  bool from_slot = false;                  // contributed from the source slot's buffer
};

std::int64_t bytes_of(const Buffer& b) {
  return static_cast<std::int64_t>(b.size_bytes());
}

MPI_Datatype mpi_type(DType dtype) {
  return dtype == DType::kFloat64 ? MPI_DOUBLE : MPI_FLOAT;
}

// Copies `box` between two dense row-major buffers of the same dtype (a tensor's and a
// message's staging buffer), one memcpy per run of the last dimension: the generic element loop
// (copy_elements) costs more than the transfer for a box of megabytes.
void copy_box(const Buffer& from, Buffer& to, const Range& box) {
  TAPESTRY_ASSERT(
      from.dtype() == to.dtype() && from.range().contains(box) && to.range().contains(box),
      "copy_box: the box must lie in both buffers");
  if (box.is_empty()) return;
  const auto element = static_cast<std::int64_t>(ir::dtype_size_bytes(from.dtype()));
  const std::size_t rank = box.rank();
  const std::int64_t run = rank == 0 ? 1 : box.shape()[rank - 1];
  const auto offset = [&](const Buffer& b, const Point& p) {
    return element_offset(b.range(), b.strides(), p) * element;
  };
  const std::size_t bytes = static_cast<std::size_t>(run * element);
  std::vector<std::int64_t> p(box.start().begin(), box.start().end());  // the run's first cell
  while (true) {
    const Point at{std::span<const std::int64_t>(p)};
    std::memcpy(to.bytes() + offset(to, at), from.bytes() + offset(from, at), bytes);
    // The next run: advance the dims before the last, row-major; done when all wrap.
    std::size_t d = rank == 0 ? 0 : rank - 1;
    while (true) {
      if (d == 0) return;
      --d;
      if (++p[d] < box.end()[d]) break;
      p[d] = box.start()[d];
    }
  }
}

// A member's contribution to collective `c`, packed into `send` (dense over `box`, the source
// slot's box the member contributes): the box as it is, except for a reduce-scatter, whose send
// buffer is the box's slices j × S_i one after another in member order, as MPI_Reduce_scatter
// hands segment i to member i.
void pack_contribution(const detail::RankCollective& c, const Buffer& from, const Range& box,
                       Buffer& send) {
  if (c.kind != detail::CollectiveKind::kReduceScatter) {
    copy_box(from, send, box);
    return;
  }
  const auto element = static_cast<std::int64_t>(ir::dtype_size_bytes(send.dtype()));
  std::int64_t offset = 0;
  for (const Range& slice : c.result_boxes) {
    const Range piece(box.start().slice(0, 1).concat(slice.start()),
                      box.end().slice(0, 1).concat(slice.end()));
    Buffer segment = Buffer::borrow(send.dtype(), piece, send.bytes() + offset * element);
    copy_box(from, segment, piece);
    offset += piece.size();
  }
}

// One step of a combine (rank_program.h): folds the rows of `box` (rows of the reduce's
// partials, in `from`) into the result box `out` of `into`, in ascending row order, each result
// cell combined with the row's cell as the reduce kernel folds — the first row of the first step
// taken as is.
void fold_rows(const Buffer& from, const Range& box, Buffer& into, const Range& out,
               ir::Monoid monoid, bool first) {
  TAPESTRY_ASSERT(box.rank() == out.rank() + 1 && out.rank() > 0 && from.range().contains(box) &&
                      into.range().contains(out) && from.dtype() == into.dtype(),
                  "fold_rows: the rows must lie in `from` and the result box in `into`");
  visit_dtype(into.dtype(), [&]<typename T>() {
    const std::size_t rank = out.rank();
    const std::int64_t run = out.shape()[rank - 1];
    const std::int64_t sx = from.strides()[rank];
    const std::int64_t so = into.strides()[rank - 1];
    const auto* x0 = reinterpret_cast<const T*>(from.bytes());
    auto* o0 = reinterpret_cast<T*>(into.bytes());
    for (std::int64_t row = box.start()[0]; row < box.end()[0]; ++row) {
      const bool take = first && row == box.start()[0];
      std::vector<std::int64_t> q(out.start().begin(), out.start().end());  // the run's first cell
      std::vector<std::int64_t> p(rank + 1);
      while (true) {
        p[0] = row;
        std::copy(q.begin(), q.end(), p.begin() + 1);
        const T* x = x0 + element_offset(from.range(), from.strides(),
                                         Point{std::span<const std::int64_t>(p)});
        T* o = o0 + element_offset(into.range(), into.strides(),
                                   Point{std::span<const std::int64_t>(q)});
        for (std::int64_t i = 0; i < run; ++i) {
          o[i * so] = take ? x[i * sx] : kernels::combine(monoid, o[i * so], x[i * sx]);
        }
        bool more = false;  // the next run: the dims before the last, row-major
        for (std::size_t d = rank - 1; d-- > 0;) {
          if (++q[d] < out.end()[d]) {
            more = true;
            break;
          }
          q[d] = out.start()[d];
        }
        if (!more) break;
      }
    }
  });
}

// Staging buffers of sends that may still be in flight when a failed run gives up on them: MPI
// may read them until MPI_Finalize, so they are kept to the end of the process.
std::mutex g_abandoned_mutex;
std::vector<Buffer> g_abandoned;

// One run on one rank: the worker side (tasks on the arena) and the communication loop (the
// caller's thread, the only one that calls MPI).
class RankRun {
 public:
  RankRun(const detail::MpiProgram& p, detail::RunState& state, RankMetrics& metrics)
      : p_(p),
        rp_(p.rank),
        state_(state),
        metrics_(metrics),
        combine_next_(p.rank.combines.size(), 0),
        combines_left_(p.rank.combines.size()),
        kernel_done_(new std::atomic<bool>[p.rank.local.tasks.size()]) {
    for (std::size_t t = 0; t < p.rank.local.tasks.size(); ++t) kernel_done_[t] = false;
    ready_.assign(p.rank.local.tasks.size(), 0);
    next_task_ = rp_.local.order.empty() ? UINT32_MAX : rp_.local.order.front();
    std::vector<std::uint32_t> whole_position(p.whole.tasks.size(), 0);
    for (std::uint32_t i = 0; i < p.whole.order.size(); ++i) whole_position[p.whole.order[i]] = i;
    for (std::uint32_t t : p.rank.whole_task) position_.push_back(whole_position[t]);
  }

  /// Runs to the end (or to a failure anywhere); returns this rank's error, if any.
  std::optional<std::string> drive();
  /// After a failed run's agreement (`failed`: a flag per rank); see the definition.
  void drain_aborts(const std::vector<int>& failed);

 private:
  void spawn(std::uint32_t t);
  std::size_t advance();
  void start(std::size_t started);
  void execute(std::uint32_t t);
  void fail(std::string message);
  void post_receives();
  bool post_sends();
  bool test_receives();
  bool test_sends();
  void post_collective(std::uint32_t part, Buffer send, bool in_place = false,
                       bool from_slot = false);
  bool take_gathered();
  bool advance_combines();
  std::optional<MPI_Message> probe(std::uint32_t m) const;
  const std::byte* slot_bytes(std::uint32_t slot, const Range& box) const;
  bool test_collectives();
  void complete_collective(std::uint32_t part);
  void arrive(const detail::RankReceive& receive, const Buffer* from);
  bool poll_aborts();
  void send_aborts();
  void unwind();
  double now_s() const {
    return std::chrono::duration<double>(Clock::now() - state_.start).count();
  }

  const detail::MpiProgram& p_;
  const detail::RankProgram& rp_;
  detail::RunState& state_;
  RankMetrics& metrics_;

  // Shared with the workers.
  std::atomic<bool> stop_{false};
  std::atomic<int> running_{0};
  std::atomic<std::size_t> done_{0};
  std::atomic<bool> injected_{false};
  std::mutex mutex_;  // guards outbox_ and error_
  // A task that ends wakes the driver (it may have boxes to send or leave the rank idle).
  std::mutex wake_mutex_;
  std::condition_variable wake_;
  bool task_ended_ = false;  // guarded by wake_mutex_
  std::vector<Outgoing> outbox_;
  std::optional<std::string> error_;
  // Starting in program order (spawn): which tasks are ready, the position in the order of the
  // next to start and of the next a runner takes, and the task at next_ (UINT32_MAX: none left).
  std::mutex ready_mutex_;
  std::vector<char> ready_;
  std::size_t next_ = 0;
  std::size_t taken_ = 0;
  std::atomic<std::uint32_t> next_task_{0};
  // Per local task: its position in the whole program's order; and the positions where the
  // receivers take the boxes this rank has sent and MPI still holds (RankMessageInfo::taken_at).
  std::vector<std::uint32_t> position_;
  std::multiset<std::uint32_t> sends_held_;

  // The communication thread's own.
  std::vector<std::uint32_t> waiting_;  // the receives (positions in rp_.receives) not yet taken
  // Per local task: its receives not yet taken. A task whose pending count is that many waits
  // only for messages (test_receives takes them then).
  std::vector<std::uint32_t> messages_left_;
  std::size_t receives_left_ = 0;
  std::vector<MPI_Request> send_requests_;
  std::vector<Buffer> send_staging_;
  std::size_t sends_posted_ = 0;
  std::size_t sends_done_ = 0;
  std::size_t sends_expected_ = 0;
  std::vector<PartRun> parts_;
  std::size_t parts_done_ = 0;
  std::vector<MPI_Request> abort_requests_;
  bool aborts_sent_ = false;

  std::vector<char> abort_seen_;  // by rank: its abort message was received

  // Rank 0: the gathers not yet taken (positions in rp_.gathered), and the whole outputs it
  // returns, by slot, assembled once its own part of the step is done (take_gathered).
  std::vector<std::uint32_t> gathers_waiting_;
  bool assembled_ = false;
  std::vector<std::uint32_t> send_slot_;  // parallel to send_requests_: the slot sent from, or none
  std::vector<std::uint32_t> send_message_;  // parallel to send_requests_: the message
  // Combines (rank_program.h): per combine, its next step; per local task, whether its kernel
  // has returned (set by the workers: a step reading a local block waits for it).
  std::vector<std::size_t> combine_next_;
  std::size_t combines_left_ = 0;
  std::unique_ptr<std::atomic<bool>[]> kernel_done_;

 public:
  std::vector<std::optional<Buffer>> results;
};

// A rank starts its tasks in its program's order (RankProgram::local.order: the whole
// program's topological order, ties in graph order, restricted to the rank — the order the
// block executor runs its program in on one thread), one after another: a ready task waits for
// the tasks before it to start, so what the rank holds at each point of its step does not depend
// on when the other ranks' messages arrive. As the order is one order of the whole program
// restricted to each rank, the first task not yet started anywhere can always start, and the
// ranks cannot wait on one another in a cycle. With `task_arena::enqueue` alone the rank ran its
// ready tasks first in first out, in the order their producers and messages happened to finish.
void RankRun::spawn(std::uint32_t t) {
  std::size_t started = 0;
  {
    const std::lock_guard lock(ready_mutex_);
    ready_[t] = 1;
    started = advance();
  }
  start(started);
}

// The tasks that may start now, in order (ready_mutex_ held): the next one waits while every
// thread runs a task (so a task's sends are counted below before the next starts, as on a device
// that runs one application at a time), while it is not ready, and while a box this rank sent is
// still held for a receiver that takes it before this task's place in the order (sends_held_).
// Returns how many were started (counted in running_); start() runs them.
std::size_t RankRun::advance() {
  std::size_t started = 0;
  bool held = false;
  const int running = running_.load(std::memory_order_acquire);
  while (next_ < rp_.local.order.size() && running + static_cast<int>(started) < p_.threads) {
    const std::uint32_t u = rp_.local.order[next_];
    if (ready_[u] == 0) break;
    held = !sends_held_.empty() && *sends_held_.begin() < position_[u];
    if (held) break;
    ++next_;
    ++started;
  }
  // Counted as running before the next task is published: the driver takes a message for the
  // next task only while nothing runs (test_receives).
  running_.fetch_add(static_cast<int>(started), std::memory_order_acq_rel);
  next_task_.store(next_ < rp_.local.order.size() && !held ? rp_.local.order[next_] : UINT32_MAX,
                   std::memory_order_release);
  return started;
}

void RankRun::start(std::size_t started) {
  for (std::size_t k = 0; k < started; ++k) {
    // The arena takes its runners first in first out; each runs the first started task in the
    // program's order not yet taken (with one thread: the order itself).
    p_.arena->enqueue([this] {
      std::uint32_t first = 0;
      {
        const std::lock_guard lock(ready_mutex_);
        first = rp_.local.order[taken_++];
      }
      execute(first);
    });
  }
}

void RankRun::fail(std::string message) {
  const std::lock_guard lock(mutex_);
  if (!error_) error_ = std::move(message);
  stop_.store(true, std::memory_order_release);
}

// One task on a pool thread: its kernel, then the boxes it sends, then its dependents.
void RankRun::execute(std::uint32_t t) {
  try {
    if (!stop_.load(std::memory_order_acquire)) {
      limit_library_threads_to_one();
      (void)state_.pending[t].load(std::memory_order_acquire);  // producers and messages
      if (p_.inject_failure && !injected_.exchange(true)) {
        throw Error(fmt::format("injected failure (TAPESTRY_TEST_MPI_FAIL) in application '{}'",
                                rp_.local.tasks[t].name));
      }
      state_.run_kernel(t);
      kernel_done_[t].store(true, std::memory_order_release);  // a combine may read its block
      if (!rp_.sends[t].empty()) {
        const std::lock_guard lock(ready_mutex_);
        for (std::uint32_t m : rp_.sends[t]) {
          if (rp_.messages[m].taken_at != UINT32_MAX) sends_held_.insert(rp_.messages[m].taken_at);
        }
      }
      for (std::uint32_t m : rp_.sends[t]) {
        const detail::RankMessageInfo& msg = rp_.messages[m];
        if (p_.send_in_place[m] != 0) {
          const std::lock_guard lock(mutex_);
          outbox_.push_back({.message = m, .from_slot = true});
          continue;
        }
        Outgoing out{m, Buffer(rp_.local.slots[msg.slot].dtype, msg.box, Buffer::Uninitialized{})};
        state_.add_live(bytes_of(out.staging));
        copy_box(*state_.buffers[msg.slot], out.staging, msg.box);
        const std::lock_guard lock(mutex_);
        outbox_.push_back(std::move(out));
      }
      for (std::uint32_t part : rp_.contributes[t]) {
        const detail::RankCollective& c = rp_.collectives[rp_.parts[part].collective];
        if (gathers_in_place(c, rp_.local.slots)) {  // the contribution is where it is
          const std::lock_guard lock(mutex_);
          outbox_.push_back({.message = part, .collective = true, .in_place = true});
          continue;
        }
        if (p_.contribute_in_place[part] != 0) {
          const std::lock_guard lock(mutex_);
          outbox_.push_back({.message = part, .collective = true, .from_slot = true});
          continue;
        }
        const Range& box = c.boxes[rp_.parts[part].member];
        Outgoing out{
            part, Buffer(rp_.local.slots[c.source_slot].dtype, box, Buffer::Uninitialized{}), true};
        // Counted by post_collective, which owns it from there.
        pack_contribution(c, *state_.buffers[c.source_slot], box, out.staging);
        const std::lock_guard lock(mutex_);
        outbox_.push_back(std::move(out));
      }
      state_.finish_task(t);
      done_.fetch_add(1, std::memory_order_acq_rel);
      const detail::BlockProgram& l = rp_.local;
      for (std::uint32_t k = l.dependents_first[t]; k < l.dependents_first[t + 1]; ++k) {
        const std::uint32_t d = l.dependents[k];
        if (state_.pending[d].fetch_sub(1, std::memory_order_acq_rel) == 1) spawn(d);
      }
    }
  } catch (const Error& e) {
    fail(e.what());
  } catch (const std::bad_alloc&) {
    fail("out of memory (an allocation failed)");
  } catch (const std::exception& e) {
    fail(e.what());
  }
  std::size_t started = 0;
  {
    const std::lock_guard lock(ready_mutex_);
    running_.fetch_sub(1, std::memory_order_acq_rel);
    started = advance();  // its thread is free: the next task in the order, if it may start
  }
  start(started);
  {
    const std::lock_guard lock(wake_mutex_);
    task_ended_ = true;
  }
  wake_.notify_one();
}

// Nothing is posted: a message is taken at its reader's turn (test_receives; matched by
// MPI_Improbe, received by MPI_Mrecv), straight into its tensor's buffer, allocated then — as
// the cost model holds a received box from its first reader's start. Receives posted at the
// start each held a staging buffer of the message's size for the whole run; messages taken as
// they arrived waited in the rank's memory for however long the rank took to reach their reader.
void RankRun::post_receives() {
  receives_left_ = rp_.receives.size();
  waiting_.resize(rp_.receives.size());
  for (std::uint32_t r = 0; r < waiting_.size(); ++r) waiting_[r] = r;
  messages_left_.assign(rp_.local.tasks.size(), 0);
  for (const detail::RankReceive& receive : rp_.receives) {
    for (std::uint32_t c : receive.consumers) ++messages_left_[c];
  }
  for (const auto& sends : rp_.sends) sends_expected_ += sends.size();
  parts_.resize(rp_.parts.size());
  gathers_waiting_.resize(rp_.gathered.size());
  for (std::uint32_t g = 0; g < gathers_waiting_.size(); ++g) gathers_waiting_[g] = g;
  assembled_ = rp_.rank != 0;
}

// Where `box` of slot `slot` starts in its buffer (contiguous_offset: it is one run there).
const std::byte* RankRun::slot_bytes(std::uint32_t slot, const Range& box) const {
  const Buffer& buffer = *state_.buffers[slot];
  const auto element = static_cast<std::int64_t>(ir::dtype_size_bytes(buffer.dtype()));
  return buffer.bytes() + *contiguous_offset(buffer.range(), box) * element;
}

// Message `m` (RankProgram::messages, to this rank) matched if it has arrived — to be received
// with MPI_Mrecv — else nullopt.
std::optional<MPI_Message> RankRun::probe(std::uint32_t m) const {
  int flag = 0;
  MPI_Message handle = MPI_MESSAGE_NULL;
  check_mpi(
      MPI_Improbe(static_cast<int>(rp_.messages[m].from), kFirstMessageTag + static_cast<int>(m),
                  MPI_COMM_WORLD, &flag, &handle, MPI_STATUS_IGNORE),
      "MPI_Improbe");
  if (flag == 0) return std::nullopt;
  return handle;
}

// Rank 0, once its own part of the step is done: the whole outputs it returns, its own rows
// copied in, then each gather from another rank as it arrives — after the step, as a device's
// results are copied out after it, so neither they nor the whole outputs count in its peak;
// during the step rank 0 holds the rows of an output it touches, as every rank does.
bool RankRun::take_gathered() {
  if (assembled_ && gathers_waiting_.empty()) return false;
  if (done_.load(std::memory_order_acquire) < rp_.local.tasks.size() || receives_left_ > 0 ||
      parts_done_ < parts_.size()) {
    return false;
  }
  bool progressed = false;
  if (!assembled_) {
    assembled_ = true;
    progressed = true;
    results.resize(rp_.local.slots.size());
    for (std::uint32_t s = 0; s < rp_.local.slots.size(); ++s) {
      const detail::BufferSlot& slot = rp_.local.slots[s];
      if (!slot.output) continue;
      results[s].emplace(slot.dtype, p_.whole.slots[s].range);
      if (state_.buffers[s] && !slot.range.is_empty()) {
        copy_box(*state_.buffers[s], *results[s], slot.range);
      }
    }
  }
  for (std::size_t i = 0; i < gathers_waiting_.size();) {
    const std::uint32_t m = rp_.gathered[gathers_waiting_[i]];
    const detail::RankMessageInfo& msg = rp_.messages[m];
    std::optional<MPI_Message> handle = probe(m);
    if (!handle) {
      ++i;
      continue;
    }
    Buffer& into = *results[msg.slot];
    const auto element = static_cast<std::int64_t>(ir::dtype_size_bytes(into.dtype()));
    if (const std::optional<std::int64_t> at = contiguous_offset(into.range(), msg.box)) {
      check_mpi(MPI_Mrecv(into.bytes() + *at * element, static_cast<int>(msg.bytes), MPI_BYTE,
                          &*handle, MPI_STATUS_IGNORE),
                "MPI_Mrecv");
    } else {
      Buffer staging(into.dtype(), msg.box, Buffer::Uninitialized{});
      check_mpi(MPI_Mrecv(staging.bytes(), static_cast<int>(msg.bytes), MPI_BYTE, &*handle,
                          MPI_STATUS_IGNORE),
                "MPI_Mrecv");
      copy_box(staging, into, msg.box);
    }
    metrics_.messages.push_back({.at_s = now_s(),
                                 .sent = false,
                                 .peer = msg.from,
                                 .bytes = msg.bytes,
                                 .what = p_.message_what[m]});
    gathers_waiting_[i] = gathers_waiting_.back();
    gathers_waiting_.pop_back();
    progressed = true;
  }
  return progressed;
}

// Folds a combine's steps at its reduce's turn (the rank idle, the reduce the next task to start
// and waiting for nothing else), in block order (rank_program.h): a received slice is taken when
// its step comes — not before, so no slice waits in this rank's memory for an earlier one — into
// a staging buffer freed after its step; a local block is read where it lies, and its use
// released. The last step releases the reduce, a no-op holding the result. Folded as the
// slices arrived instead, a rank's own block, which the others read last, was freed whenever
// the slowest of them got to it (4 ranks: one rank in three held it into its next task).
bool RankRun::advance_combines() {
  if (combines_left_ == 0) return false;
  bool progressed = false;
  for (std::size_t c = 0; c < rp_.combines.size(); ++c) {
    const detail::RankCombine& combine = rp_.combines[c];
    std::size_t& next = combine_next_[c];
    if (next == combine.steps.size()) continue;
    // At the reduce's turn: the rank idle, the reduce the next to start, waiting only for this.
    if (running_.load(std::memory_order_acquire) != 0 ||
        next_task_.load(std::memory_order_acquire) != combine.reduce ||
        state_.pending[combine.reduce].load(std::memory_order_acquire) !=
            messages_left_[combine.reduce] + 1) {
      continue;
    }
    while (next < combine.steps.size()) {
      const detail::RankCombineStep& step = combine.steps[next];
      if (step.message == UINT32_MAX) {
        if (!kernel_done_[step.writer].load(std::memory_order_acquire)) break;
        state_.allocate(combine.result_slot);
        fold_rows(*state_.buffers[step.slot], step.box, *state_.buffers[combine.result_slot],
                  combine.result_box, combine.monoid, next == 0);
        state_.release(step.slot);
      } else {
        const detail::RankMessageInfo& msg = rp_.messages[step.message];
        std::optional<MPI_Message> handle = probe(step.message);
        if (!handle) break;
        const Clock::time_point begin = Clock::now();
        Buffer staging(rp_.local.slots[combine.result_slot].dtype, msg.box,
                       Buffer::Uninitialized{});
        state_.add_live(bytes_of(staging));
        check_mpi(MPI_Mrecv(staging.bytes(), static_cast<int>(msg.bytes), MPI_BYTE, &*handle,
                            MPI_STATUS_IGNORE),
                  "MPI_Mrecv");
        state_.allocate(combine.result_slot);
        fold_rows(staging, msg.box, *state_.buffers[combine.result_slot], combine.result_box,
                  combine.monoid, next == 0);
        state_.add_live(-bytes_of(staging));
        metrics_.unpack_s += std::chrono::duration<double>(Clock::now() - begin).count();
        metrics_.messages.push_back({.at_s = now_s(),
                                     .sent = false,
                                     .peer = msg.from,
                                     .bytes = msg.bytes,
                                     .what = p_.message_what[step.message]});
      }
      ++next;
      progressed = true;
    }
    if (next < combine.steps.size()) continue;
    --combines_left_;
    if (state_.pending[combine.reduce].fetch_sub(1, std::memory_order_acq_rel) == 1) {
      spawn(combine.reduce);
    }
  }
  return progressed;
}

bool RankRun::post_sends() {
  std::vector<Outgoing> ready;
  {
    const std::lock_guard lock(mutex_);
    ready.swap(outbox_);
  }
  for (Outgoing& out : ready) {
    if (out.collective) {
      post_collective(out.message, std::move(out.staging), out.in_place, out.from_slot);
      continue;
    }
    const detail::RankMessageInfo& msg = rp_.messages[out.message];
    send_requests_.push_back(MPI_REQUEST_NULL);
    send_slot_.push_back(out.from_slot ? msg.slot : UINT32_MAX);
    send_message_.push_back(out.message);
    const std::byte* data = out.from_slot ? slot_bytes(msg.slot, msg.box) : out.staging.bytes();
    check_mpi(MPI_Isend(data, static_cast<int>(msg.bytes), MPI_BYTE, static_cast<int>(msg.to),
                        kFirstMessageTag + static_cast<int>(out.message), MPI_COMM_WORLD,
                        &send_requests_.back()),
              "MPI_Isend");
    send_staging_.push_back(std::move(out.staging));
    ++sends_posted_;
    metrics_.messages.push_back({.at_s = now_s(),
                                 .sent = true,
                                 .peer = msg.to,
                                 .bytes = msg.bytes,
                                 .what = p_.message_what[out.message]});
  }
  return !ready.empty();
}

// Takes the messages of the next task to start (spawn) once they have arrived, into their
// tensor (post_receives), when the rank is idle and the task waits for nothing else — its
// reader's turn — and releases the tasks that waited for them. A box of whole rows of its slot
// (every other dim as the slot has it: a contiguous run of bytes) is received in place; another box
// goes through a staging buffer, held only while it is copied.
bool RankRun::test_receives() {
  if (receives_left_ == 0) return false;
  bool progressed = false;
  for (std::size_t i = 0; i < waiting_.size();) {
    const detail::RankReceive& receive = rp_.receives[waiting_[i]];
    const detail::RankMessageInfo& msg = rp_.messages[receive.message];
    // At its reader's turn: the rank idle, the reader the next to start and waiting only for
    // messages.
    const std::uint32_t next = next_task_.load(std::memory_order_acquire);
    const bool wanted =
        running_.load(std::memory_order_acquire) == 0 &&
        std::find(receive.consumers.begin(), receive.consumers.end(), next) !=
            receive.consumers.end() &&
        state_.pending[next].load(std::memory_order_acquire) == messages_left_[next];
    std::optional<MPI_Message> handle;
    if (wanted) handle = probe(receive.message);
    if (!handle) {
      ++i;
      continue;
    }
    const Clock::time_point begin = Clock::now();
    state_.allocate(msg.slot);
    Buffer& into = *state_.buffers[msg.slot];
    const Range& range = into.range();
    bool rows = !msg.box.is_empty() && range.rank() > 0;
    for (std::size_t d = 1; rows && d < range.rank(); ++d) {
      rows = msg.box.start()[d] == range.start()[d] && msg.box.end()[d] == range.end()[d];
    }
    if (rows) {
      const auto element = static_cast<std::int64_t>(ir::dtype_size_bytes(into.dtype()));
      std::byte* at =
          into.bytes() + element_offset(range, into.strides(), msg.box.start()) * element;
      check_mpi(MPI_Mrecv(at, static_cast<int>(msg.bytes), MPI_BYTE, &*handle, MPI_STATUS_IGNORE),
                "MPI_Mrecv");
    } else {
      Buffer staging(into.dtype(), msg.box, Buffer::Uninitialized{});
      state_.add_live(bytes_of(staging));
      check_mpi(MPI_Mrecv(staging.bytes(), static_cast<int>(msg.bytes), MPI_BYTE, &*handle,
                          MPI_STATUS_IGNORE),
                "MPI_Mrecv");
      copy_box(staging, into, msg.box);
      state_.add_live(-bytes_of(staging));
    }
    metrics_.unpack_s += std::chrono::duration<double>(Clock::now() - begin).count();
    for (std::uint32_t c : receive.consumers) --messages_left_[c];
    arrive(receive, nullptr);
    metrics_.messages.push_back({.at_s = now_s(),
                                 .sent = false,
                                 .peer = msg.from,
                                 .bytes = msg.bytes,
                                 .what = p_.message_what[receive.message]});
    --receives_left_;
    waiting_[i] = waiting_.back();
    waiting_.pop_back();
    progressed = true;
  }
  return progressed;
}

// A message's box is here (in `from`, whose range holds it; null: nothing to unpack): into its
// tensor, then its consumers may run.
void RankRun::arrive(const detail::RankReceive& receive, const Buffer* from) {
  const detail::RankMessageInfo& msg = rp_.messages[receive.message];
  if (from != nullptr) {
    const Clock::time_point begin = Clock::now();
    state_.allocate(msg.slot);
    copy_box(*from, *state_.buffers[msg.slot], msg.box);
    metrics_.unpack_s += std::chrono::duration<double>(Clock::now() - begin).count();
  }
  state_.release(msg.slot);
  for (std::uint32_t c : receive.consumers) {
    if (state_.pending[c].fetch_sub(1, std::memory_order_acq_rel) == 1) spawn(c);
  }
}

// Posts this rank's part of a collective, its contribution `send` packed.
void RankRun::post_collective(std::uint32_t i, Buffer send, bool in_place, bool from_slot) {
  const detail::RankCollectivePart& part = rp_.parts[i];
  const detail::RankCollective& c = rp_.collectives[part.collective];
  PartRun& run = parts_[i];
  const DType dtype = rp_.local.slots[c.source_slot].dtype;
  const MPI_Comm comm = p_.comms[i];
  const int count = static_cast<int>(from_slot ? c.boxes[part.member].size() : send.size());
  run.send = std::move(send);
  run.from_slot = from_slot;
  // The contribution: packed, or where it lies in the source slot (contribute_in_place).
  const void* contribution =
      from_slot ? slot_bytes(c.source_slot, c.boxes[part.member]) : run.send.bytes();
  state_.add_live(bytes_of(run.send));
  switch (c.kind) {
    case detail::CollectiveKind::kReduce:
    case detail::CollectiveKind::kAllreduce: {
      const bool receives = c.kind == detail::CollectiveKind::kAllreduce || c.root == rp_.rank;
      if (receives) run.receive = Buffer(dtype, c.result_box, Buffer::Uninitialized{});
      if (c.kind == detail::CollectiveKind::kAllreduce) {
        check_mpi(MPI_Iallreduce(contribution, run.receive.bytes(), count, mpi_type(dtype), MPI_SUM,
                                 comm, &run.request),
                  "MPI_Iallreduce");
      } else {
        const auto root = std::find(c.members.begin(), c.members.end(), c.root) - c.members.begin();
        check_mpi(MPI_Ireduce(contribution, receives ? run.receive.bytes() : nullptr, count,
                              mpi_type(dtype), MPI_SUM, static_cast<int>(root), comm, &run.request),
                  "MPI_Ireduce");
      }
      break;
    }
    case detail::CollectiveKind::kReduceScatter: {
      const auto element = static_cast<std::int64_t>(ir::dtype_size_bytes(dtype));
      for (const Range& slice : c.result_boxes) {  // in elements, each within one message's limit
        (void)byte_count(slice.size() * element, "a reduce-scatter's slice");
        run.counts.push_back(static_cast<int>(slice.size()));
      }
      run.receive = Buffer(dtype, c.result_boxes[part.member], Buffer::Uninitialized{});
      check_mpi(MPI_Ireduce_scatter(contribution, run.receive.bytes(), run.counts.data(),
                                    mpi_type(dtype), MPI_SUM, comm, &run.request),
                "MPI_Ireduce_scatter");
      break;
    }
    case detail::CollectiveKind::kAllgather: {
      const auto element = static_cast<std::int64_t>(ir::dtype_size_bytes(dtype));
      if (in_place) {  // gathers_in_place: each box at its own offset in the tensor's buffer
        run.in_place = true;
        Buffer& tensor = *state_.buffers[c.source_slot];
        for (const Range& box : c.boxes) {
          run.displacements.push_back(
              byte_count(element_offset(tensor.range(), tensor.strides(), box.start()) * element,
                         "an all-gather"));
          run.counts.push_back(byte_count(box.size() * element, "an all-gather's part"));
        }
        check_mpi(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_BYTE, tensor.bytes(), run.counts.data(),
                                  run.displacements.data(), MPI_BYTE, comm, &run.request),
                  "MPI_Iallgatherv");
        break;
      }
      std::int64_t total = 0;
      for (const Range& box : c.boxes) {
        run.displacements.push_back(byte_count(total, "an all-gather"));
        run.counts.push_back(byte_count(box.size() * element, "an all-gather's part"));
        total += box.size() * element;
      }
      run.receive = Buffer(dtype, Range::of_shape(Point{total / element}), Buffer::Uninitialized{});
      check_mpi(MPI_Iallgatherv(run.send.bytes(), run.counts[part.member], MPI_BYTE,
                                run.receive.bytes(), run.counts.data(), run.displacements.data(),
                                MPI_BYTE, comm, &run.request),
                "MPI_Iallgatherv");
      break;
    }
  }
  state_.add_live(bytes_of(run.receive));
  run.posted = true;
}

bool RankRun::test_collectives() {
  bool progressed = false;
  for (std::uint32_t i = 0; i < parts_.size(); ++i) {
    PartRun& run = parts_[i];
    if (!run.posted || run.done) continue;
    int flag = 0;
    check_mpi(MPI_Test(&run.request, &flag, MPI_STATUS_IGNORE), "MPI_Test");
    if (flag == 0) continue;
    run.done = true;
    ++parts_done_;
    progressed = true;
    if (!stop_.load(std::memory_order_acquire)) complete_collective(i);
    if (run.from_slot) state_.release(rp_.collectives[rp_.parts[i].collective].source_slot);
    state_.add_live(-bytes_of(run.send) - bytes_of(run.receive));
    run.send = Buffer();
    run.receive = Buffer();
  }
  return progressed;
}

// A collective finished: its result goes where the messages it replaced would have gone.
void RankRun::complete_collective(std::uint32_t i) {
  const detail::RankCollectivePart& part = rp_.parts[i];
  const detail::RankCollective& c = rp_.collectives[part.collective];
  PartRun& run = parts_[i];
  if (c.kind == detail::CollectiveKind::kAllgather && run.in_place) {
    for (const detail::RankReceive& receive : part.arrivals) arrive(receive, nullptr);
  } else if (c.kind == detail::CollectiveKind::kAllgather) {
    for (const detail::RankReceive& receive : part.arrivals) {
      const detail::RankMessageInfo& msg = rp_.messages[receive.message];
      const auto j = static_cast<std::size_t>(
          std::find(c.members.begin(), c.members.end(), msg.from) - c.members.begin());
      const Buffer from = Buffer::borrow(run.receive.dtype(), c.boxes[j],
                                         run.receive.bytes() + run.displacements[j]);
      arrive(receive, &from);
    }
  } else if (c.kind == detail::CollectiveKind::kReduceScatter) {
    state_.allocate(c.result_slot);  // this member's slice of the sum: its (no-op) reduce's result
    copy_box(run.receive, *state_.buffers[c.result_slot], c.result_boxes[part.member]);
    for (const detail::RankReceive& receive : part.arrivals) arrive(receive, nullptr);
  } else {
    if (c.root == rp_.rank) {  // the sum is the (no-op) reduce's result
      state_.allocate(c.result_slot);
      copy_box(run.receive, *state_.buffers[c.result_slot], c.result_box);
    }
    for (const detail::RankReceive& receive : part.arrivals) {
      // The result, to a member of an allreduce; at the root, the partials it no longer needs.
      const bool result = rp_.messages[receive.message].slot == c.result_slot;
      arrive(receive, result ? &run.receive : nullptr);
    }
  }
  metrics_.messages.push_back(
      {.at_s = now_s(),
       .peer = c.root,
       .bytes = c.bytes,
       .what = fmt::format("{} {}", detail::collective_kind_name(c.kind), c.what),
       .collective = true});
}

bool RankRun::test_sends() {
  if (sends_done_ == sends_posted_) return false;
  std::vector<int> indices(send_requests_.size());
  int count = 0;
  check_mpi(MPI_Testsome(static_cast<int>(send_requests_.size()), send_requests_.data(), &count,
                         indices.data(), MPI_STATUSES_IGNORE),
            "MPI_Testsome");
  if (count == MPI_UNDEFINED || count == 0) return false;
  for (int i = 0; i < count; ++i) {
    const auto k = static_cast<std::size_t>(indices[static_cast<std::size_t>(i)]);
    Buffer& staging = send_staging_[k];
    state_.add_live(-bytes_of(staging));
    staging = Buffer();
    if (send_slot_[k] != UINT32_MAX) state_.release(send_slot_[k]);  // its buffer's use is over
    send_slot_[k] = UINT32_MAX;
  }
  sends_done_ += static_cast<std::size_t>(count);
  std::size_t started = 0;
  {
    const std::lock_guard lock(ready_mutex_);
    for (int i = 0; i < count; ++i) {
      const std::uint32_t m =
          send_message_[static_cast<std::size_t>(indices[static_cast<std::size_t>(i)])];
      if (rp_.messages[m].taken_at == UINT32_MAX) continue;
      sends_held_.erase(sends_held_.find(rp_.messages[m].taken_at));
    }
    started = advance();
  }
  start(started);
  return true;
}

// Another rank failed: stop.
bool RankRun::poll_aborts() {
  int flag = 0;
  MPI_Status status;
  check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, kAbortTag, MPI_COMM_WORLD, &flag, &status), "MPI_Iprobe");
  if (flag == 0) return false;
  check_mpi(MPI_Recv(nullptr, 0, MPI_BYTE, status.MPI_SOURCE, kAbortTag, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE),
            "MPI_Recv");
  abort_seen_[static_cast<std::size_t>(status.MPI_SOURCE)] = 1;
  stop_.store(true, std::memory_order_release);
  return true;
}

void RankRun::send_aborts() {
  if (aborts_sent_) return;
  aborts_sent_ = true;
  for (std::uint32_t r = 0; r < rp_.ranks; ++r) {
    if (r == rp_.rank) continue;
    abort_requests_.push_back(MPI_REQUEST_NULL);
    check_mpi(MPI_Isend(nullptr, 0, MPI_BYTE, static_cast<int>(r), kAbortTag, MPI_COMM_WORLD,
                        &abort_requests_.back()),
              "MPI_Isend");
  }
}

// After a failure: sends still in flight are left to MPI (a receiver that stopped may never match
// them), their buffers kept until the process ends; no receive is posted (test_receives).
void RankRun::unwind() {
  // A collective cannot be cancelled: this rank posts the ones it has not (with whatever its
  // buffer holds; the run has failed) and waits for them, as every member does on its way out.
  for (std::uint32_t i = 0; i < parts_.size(); ++i) {
    if (parts_[i].posted) continue;
    const detail::RankCollective& c = rp_.collectives[rp_.parts[i].collective];
    post_collective(i, Buffer(rp_.local.slots[c.source_slot].dtype, c.boxes[rp_.parts[i].member],
                              Buffer::Uninitialized{}));
  }
  for (PartRun& run : parts_) {
    if (!run.done) MPI_Wait(&run.request, MPI_STATUS_IGNORE);
  }
  const std::lock_guard lock(g_abandoned_mutex);
  for (std::size_t i = 0; i < send_requests_.size(); ++i) {
    if (send_requests_[i] == MPI_REQUEST_NULL) continue;
    MPI_Request_free(&send_requests_[i]);
    g_abandoned.push_back(std::move(send_staging_[i]));
    if (send_slot_[i] != UINT32_MAX && state_.buffers[send_slot_[i]]) {  // sent from the slot
      g_abandoned.push_back(std::move(*state_.buffers[send_slot_[i]]));
      state_.buffers[send_slot_[i]].reset();
    }
  }
}

std::optional<std::string> RankRun::drive() {
  abort_seen_.assign(rp_.ranks, 0);
  post_receives();
  check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  state_.start = Clock::now();
  for (std::uint32_t t : rp_.local.roots) spawn(t);
  const std::size_t tasks = rp_.local.tasks.size();
  Clock::time_point idle_since{};
  bool idle = false;
  while (true) {
    // Sends are tested before receives are taken: a buffer whose send is over is freed before
    // the box a reader waits for is allocated.
    bool progressed = post_sends();
    progressed |= test_sends();
    progressed |= test_receives();
    progressed |= test_collectives();
    progressed |= advance_combines();
    progressed |= take_gathered();
    progressed |= poll_aborts();
    bool failed = false;
    {
      const std::lock_guard lock(mutex_);
      failed = error_.has_value();
    }
    if (failed) send_aborts();
    const bool stopping = stop_.load(std::memory_order_acquire);
    const int running = running_.load(std::memory_order_acquire);
    if (stopping && running == 0) break;
    if (!stopping && done_.load(std::memory_order_acquire) == tasks && receives_left_ == 0 &&
        combines_left_ == 0 && sends_posted_ == sends_expected_ && sends_done_ == sends_posted_ &&
        parts_done_ == parts_.size() && assembled_ && gathers_waiting_.empty()) {
      break;
    }
    // Waiting: nothing runs and something is left to run (it waits for a message).
    const bool waiting = running == 0 && done_.load(std::memory_order_acquire) < tasks;
    const Clock::time_point now = Clock::now();
    if (idle) metrics_.wait_s += std::chrono::duration<double>(now - idle_since).count();
    idle = waiting;
    idle_since = now;
    // A short sleep, not a spin: on an oversubscribed host (more ranks and threads than cores)
    // a spinning poller steals the core from the very rank it waits for; a 16 MiB message
    // measured 4–140 ms spinning with sched_yield, 8–19 ms sleeping 20 µs between polls. While
    // this rank computes, the driver sleeps longer — until a task ends (it wakes the driver)
    // or 500 µs pass: polling every 20 µs woke it 50,000 times a second on the core of the
    // rank's own compute thread, and the MLP's GEMMs ran 1.45× slower for it (bench/mpi_bench.sh).
    // A collective in flight while nothing computes here is polled without a pause: Open MPI's
    // non-blocking collectives advance only inside MPI calls, a segment at a time, so a 16 MiB
    // reduce polled every 20 µs took ~280 ms (2-rank Megatron MLP: 640 ms against 342 ms
    // point to point).
    std::size_t parts_in_flight = 0;
    for (const PartRun& run : parts_) parts_in_flight += run.posted && !run.done ? 1 : 0;
    if (!progressed && !(parts_in_flight > 0 && running == 0)) {
      const auto pause =
          running > 0 ? std::chrono::microseconds(500) : std::chrono::microseconds(20);
      std::unique_lock lock(wake_mutex_);
      wake_.wait_for(lock, pause, [&] { return task_ended_; });
      task_ended_ = false;
    }
  }
  metrics_.run.wall_s = std::chrono::duration<double>(Clock::now() - state_.start).count();
  std::optional<std::string> error;
  {
    const std::lock_guard lock(mutex_);
    error = error_;
  }
  if (error) send_aborts();
  if (stop_.load()) unwind();
  return error;
}

// After a failed run's agreement: receives the abort message of every failed rank not yet
// taken, then completes this rank's own, so nothing is left pending at MPI_Finalize.
void RankRun::drain_aborts(const std::vector<int>& failed) {
  for (std::uint32_t r = 0; r < rp_.ranks; ++r) {
    if (r == rp_.rank || failed[r] == 0 || abort_seen_[r] != 0) continue;
    MPI_Recv(nullptr, 0, MPI_BYTE, static_cast<int>(r), kAbortTag, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
  }
  for (MPI_Request& request : abort_requests_) MPI_Wait(&request, MPI_STATUS_IGNORE);
}

}  // namespace

MpiExecutor::Result MpiExecutor::run(BufferMap inputs) const {
  const detail::MpiProgram& p = *program_;
  const detail::RankProgram& rp = p.rank;
  Result result;
  result.metrics.rank = rp.rank;
  result.metrics.name = p.rank_names[rp.rank];
  detail::RunState state(rp.local, *p.pool, p.poison);
  std::optional<std::string> error;
  try {
    detail::bind_inputs(graph_, std::move(inputs), state, &rp.needed_inputs);
  } catch (const Error& e) {
    error = e.what();
  }
  result.failure = session_.agree(error);  // no rank starts unless every one could bind
  if (result.failure) return result;
  p.make_comms();
  state.records.resize(rp.local.tasks.size());

  RankRun run(p, state, result.metrics);
  error = run.drive();
  result.failure = session_.agree(error);
  if (result.failure) {
    std::vector<int> failed(rp.ranks);  // which ranks failed (agree names only the first)
    const int mine = error ? 1 : 0;
    check_mpi(MPI_Allgather(&mine, 1, MPI_INT, failed.data(), 1, MPI_INT, MPI_COMM_WORLD),
              "MPI_Allgather");
    run.drain_aborts(failed);
    return result;
  }

  const double wall_s = result.metrics.run.wall_s;
  result.metrics.run = detail::make_metrics(rp.local, state, wall_s, p.threads);
  result.metrics.bytes_sent = rp.bytes_sent;
  result.metrics.bytes_received = rp.bytes_received;
  result.metrics.messages_sent = static_cast<std::uint32_t>(messages_sent());
  result.metrics.messages_received = static_cast<std::uint32_t>(messages_received());
  result.metrics.collectives = collectives();
  if (rp.rank == 0) {  // the whole outputs (take_gathered)
    for (std::uint32_t s = 0; s < run.results.size(); ++s) {
      if (run.results[s])
        result.outputs.emplace(rp.local.slots[s].tensor, std::move(*run.results[s]));
    }
  }
  return result;
}

}  // namespace tapestry::runtime
