// CMakeLists.txt, program.h and main.cpp of a generated C++ program (cpp_support.h). The
// helpers are plain C++ over the kernel library's public headers (runtime/kernel.h, npy.h,
// fast_kernels.h) and, with more than one rank, MPI's C API. (The templates' raw strings are
// delimited `code`, which clang-format leaves alone; it reformats `cpp` ones as C++.)
#include "cpp_support.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

namespace tapestry::codegen::detail {

namespace {

constexpr std::string_view kHeaderCommon = R"code(#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/runtime/body_kernels.h"
#include "tapestry/runtime/kernel.h"
@MPI_INCLUDE@
namespace program {

using tapestry::ir::DType;
using tapestry::ir::Monoid;
using tapestry::runtime::ConstView;
using tapestry::runtime::View;
using tapestry::zspace::IndexProjection;
using tapestry::zspace::Point;
using tapestry::zspace::Range;

/// The box [start, end) of a tensor, in its coordinates.
Range box(std::initializer_list<std::int64_t> start, std::initializer_list<std::int64_t> end);

/// The IPF i ↦ [A·i + b, A·i + b + shape): `a` row-major, one row of `index_rank` entries per
/// tensor dim.
IndexProjection ipf(std::size_t index_rank, std::vector<std::int64_t> a, Point b, Point shape);

/// A rank's buffer of one tensor: `data` (a static array) holds `box` of it, dense and row-major.
struct Tensor {
  Tensor(DType dtype, void* data, Range box);
  /// The view of `sub`, which lies inside `box`: origin = data + the offset of sub's start.
  [[nodiscard]] View view(const Range& sub) const;
  [[nodiscard]] std::int64_t size_bytes() const;

  DType dtype;
  std::byte* data;
  Range box;
  Point strides;
};

/// One input or output list entry of an operation: its name and IPF (positions in order).
struct Port {
  std::string name;
  IndexProjection ipf;
};

/// An operation: its kernel among runtime::fast_kernels() or the kernel files' bodies the
/// program carries (kRanks.kernels; looked up once, when constructed), params, index dims,
/// reductions and the IPFs of its ports.
class Operation {
 public:
  Operation(std::string kernel, std::string name, const char* params_json,
            std::vector<std::string> index_names, std::vector<tapestry::ir::Reduction> reductions,
            std::vector<Port> inputs, std::vector<Port> outputs);
  /// One application: the kernel over `index`, on `inputs` and `outputs`, the views of
  /// IPF(index) of each port in the order of the constructor's ports.
  void run(const Range& index, std::initializer_list<ConstView> inputs,
           std::initializer_list<View> outputs) const;

 private:
  std::string kernel_;
  std::string name_;
  nlohmann::json params_;
  std::vector<std::string> index_names_;
  std::vector<tapestry::ir::Reduction> reductions_;
  std::vector<Port> inputs_;
  std::vector<Port> outputs_;
  tapestry::runtime::KernelFn fn_;
  tapestry::runtime::PrepareFn prepare_ = nullptr;
  mutable std::shared_ptr<const void> prepared_;
};

/// What a rank's function needs from main: the files, and with MPI its messages and collectives.
class Context {
 public:
  Context(std::string inputs, std::string outputs, int rank);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  /// Reads `into.box` of the input in file IN/`file`, a tensor over `whole` (its shape and
  /// dtype are checked).
  void load(const char* file, const Range& whole, const Tensor& into) const;
  /// Writes OUT/<file>.npy of each output (rank 0): every file, or none.
  void write_outputs(std::initializer_list<std::pair<const char*, const Tensor*>> outputs) const;
  /// The first run (it loads the inputs; the buffers keep them) and the last (it writes the
  /// outputs): `--repeat N` runs the program N times.
  bool first = true;
  bool last = true;
@MPI_CONTEXT@
 private:
  std::string inputs_;
  std::string outputs_;
  int rank_ = 0;
@MPI_MEMBERS@};

/// The program's ranks (ranks.cpp): rank i runs functions[i] (rank<i>.cpp); collective g's
/// communicator holds the ranks groups[g]; `kernels` are the kernel files' kernels the program
/// calls, by their bodies (evaluated as `tapestry run` evaluates them).
struct Ranks {
  std::vector<void (*)(Context&)> functions;
  std::vector<std::vector<int>> groups;
  std::vector<tapestry::runtime::BodySource> kernels;
};
extern const Ranks kRanks;
}  // namespace program
)code";

constexpr std::string_view kMpiContext = R"code(
  /// Posts the receive of message `id` (MPI tag id): `box` of a tensor from rank `from`.
  void receive(int id, const Range& box, DType dtype, int from);
  /// Waits for message `id` and copies its box into `into`.
  void wait(int id, const Tensor& into);
  /// Sends `box` of `from` to rank `to` as message `id` (packed now, sent without blocking).
  void send(int id, const Tensor& from, const Range& box, int to);
  /// Collective `group` (its communicator, made by main): the sum of the members' `box` of
  /// `from` (a block of partials: a first dim of extent 1) onto member `root`, or onto every
  /// member when root is -1; the sum, a tensor over `result`, is copied into `into` (null on a
  /// member that gets nothing) at each of `copies`.
  void reduce(int group, const Tensor& from, const Range& box, int root, const Tensor* into,
              const Range& result, std::initializer_list<Range> copies);
  /// Collective `group`: this member's `box` of `from` (block × every slice) summed over the
  /// members, slice i of the sum to member i; `member`'s slice is copied into `into`.
  void reduce_scatter(int group, const Tensor& from, const Range& box,
                      std::initializer_list<Range> slices, int member, const Tensor& into);
  /// Collective `group`: member i contributes boxes[i] of `tensor`; every member copies every
  /// other member's box into its `tensor`.
  void all_gather(int group, const Tensor& tensor, std::initializer_list<Range> boxes, int member);
  /// Waits until every send has gone.
  void finish();
  /// The communicators of the collectives, made by every rank in this order (main).
  std::vector<MPI_Comm> groups;
)code";

constexpr std::string_view kMpiMembers = R"code(  struct Message {
    Range box;
    std::vector<std::byte> staging;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  std::vector<std::pair<int, Message>> receives_;
  std::vector<Message> sends_;
)code";

constexpr std::string_view kMainCommon = R"code(#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>

#include "program.h"
#include "tapestry/runtime/buffer.h"
#include "tapestry/runtime/executable_kernels.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/npy.h"
#include "tapestry/support/error.h"

namespace program {

namespace fs = std::filesystem;
using tapestry::Error;
using tapestry::runtime::Buffer;

Range box(std::initializer_list<std::int64_t> start, std::initializer_list<std::int64_t> end) {
  return Range(Point(start), Point(end));
}

IndexProjection ipf(std::size_t index_rank, std::vector<std::int64_t> a, Point b, Point shape) {
  return IndexProjection(tapestry::zspace::AffineMap(index_rank, a, std::move(b)),
                         std::move(shape));
}

namespace {

// The fast kernels and, by their bodies, the kernel files' kernels of kRanks.kernels.
const tapestry::runtime::ExecutableKernels& program_kernels() {
  static const tapestry::runtime::ExecutableKernels kernels = [] {
    tapestry::runtime::ExecutableKernels all = tapestry::runtime::fast_kernels();
    for (const tapestry::runtime::BodySource& source : kRanks.kernels) {
      all.add(source.name,
              tapestry::runtime::body_kernel(source, tapestry::runtime::BodyEvaluation::kFast));
    }
    return all;
  }();
  return kernels;
}

Point dense_strides(const Point& shape) {
  std::vector<std::int64_t> strides(shape.rank(), 1);
  for (std::size_t d = shape.rank(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return Point(std::span<const std::int64_t>(strides));
}

std::int64_t element_bytes(DType dtype) {
  return static_cast<std::int64_t>(tapestry::ir::dtype_size_bytes(dtype));
}

// Byte offset of point `p` in a dense row-major buffer over `range`.
std::int64_t byte_offset(const Range& range, const Point& strides, const Point& p, DType dtype) {
  std::int64_t offset = 0;
  for (std::size_t d = 0; d < p.rank(); ++d) offset += (p[d] - range.start()[d]) * strides[d];
  return offset * element_bytes(dtype);
}

// Copies `box` between two dense row-major buffers over `from_range` and `to_range` (both hold
// it), one memcpy per run of the last dim.
void copy_box(const std::byte* from, const Range& from_range, std::byte* to, const Range& to_range,
              const Range& box, DType dtype) {
  if (box.is_empty()) return;
  const Point from_strides = dense_strides(from_range.shape());
  const Point to_strides = dense_strides(to_range.shape());
  const std::size_t rank = box.rank();
  const std::int64_t run = rank == 0 ? 1 : box.shape()[rank - 1];
  const auto bytes = static_cast<std::size_t>(run * element_bytes(dtype));
  std::vector<std::int64_t> p(box.start().begin(), box.start().end());
  while (true) {
    const Point at{std::span<const std::int64_t>(p)};
    std::memcpy(to + byte_offset(to_range, to_strides, at, dtype),
                from + byte_offset(from_range, from_strides, at, dtype), bytes);
    std::size_t d = rank == 0 ? 0 : rank - 1;
    while (true) {
      if (d == 0) return;
      --d;
      if (++p[d] < box.end()[d]) break;
      p[d] = box.start()[d];
    }
  }
}

}  // namespace

Tensor::Tensor(DType dtype_, void* data_, Range box_)
    : dtype(dtype_),
      data(static_cast<std::byte*>(data_)),
      box(std::move(box_)),
      strides(dense_strides(box.shape())) {
  // As the block executor's large buffers: transparent huge pages where the kernel has them.
  constexpr std::int64_t kHugePage = 2 << 20;
  if (size_bytes() >= kHugePage) {
    (void)::madvise(data, static_cast<std::size_t>(size_bytes()), MADV_HUGEPAGE);
  }
}

View Tensor::view(const Range& sub) const {
  const std::int64_t offset = sub.is_empty() ? 0 : byte_offset(box, strides, sub.start(), dtype);
  return View(dtype, data + offset, sub, strides);
}

std::int64_t Tensor::size_bytes() const {
  return box.size() * element_bytes(dtype);
}

Operation::Operation(std::string kernel, std::string name, const char* params_json,
                     std::vector<std::string> index_names,
                     std::vector<tapestry::ir::Reduction> reductions, std::vector<Port> inputs,
                     std::vector<Port> outputs)
    : kernel_(std::move(kernel)),
      name_(std::move(name)),
      params_(nlohmann::json::parse(params_json)),
      index_names_(std::move(index_names)),
      reductions_(std::move(reductions)),
      inputs_(std::move(inputs)),
      outputs_(std::move(outputs)) {
  const tapestry::runtime::ExecutableKernels& kernels = program_kernels();
  fn_ = kernels.lookup(kernel_, name_);
  prepare_ = kernels.find_prepare(kernel_);
}

void Operation::run(const Range& index, std::initializer_list<ConstView> inputs,
                    std::initializer_list<View> outputs) const {
  tapestry::runtime::KernelCall call{.kernel = kernel_,
                                     .operation = name_,
                                     .index = index,
                                     .params = &params_,
                                     .index_names = index_names_,
                                     .reductions = reductions_};
  std::size_t i = 0;
  for (const ConstView& v : inputs) {
    call.inputs.append(inputs_[i].name, {v, &inputs_[i].ipf});
    ++i;
  }
  i = 0;
  for (const View& v : outputs) {
    call.outputs.append(outputs_[i].name, {v, &outputs_[i].ipf});
    ++i;
  }
  // What the block executor prepares once per operation (the stages of a fused one, say).
  if (prepare_ != nullptr && !prepared_) prepared_ = prepare_(call);
  call.prepared = prepared_.get();
  fn_(call);
}

Context::Context(std::string inputs, std::string outputs, int rank)
    : inputs_(std::move(inputs)), outputs_(std::move(outputs)), rank_(rank) {}

void Context::load(const char* file, const Range& whole, const Tensor& into) const {
  const fs::path path = fs::path(inputs_) / file;
  if (!fs::is_regular_file(path)) throw Error(path.string() + ": missing input file");
  const Buffer b = tapestry::runtime::read_npy_box(path, whole.shape(),
                                                   into.box.translate(-whole.start()));
  if (b.dtype() != into.dtype) {
    throw Error(path.string() + ": dtype " + std::string(tapestry::ir::dtype_name(b.dtype())) +
                ", expected " + std::string(tapestry::ir::dtype_name(into.dtype)));
  }
  std::memcpy(into.data, b.bytes(), static_cast<std::size_t>(into.size_bytes()));
}

void Context::write_outputs(
    std::initializer_list<std::pair<const char*, const Tensor*>> outputs) const {
  std::error_code ec;
  fs::create_directories(outputs_, ec);
  if (ec) throw Error(outputs_ + ": cannot create the directory: " + ec.message());
  // Every file under a temporary name first, then all renamed into place.
  std::vector<std::pair<fs::path, fs::path>> staged;
  try {
    for (const auto& [file, t] : outputs) {
      const fs::path path = fs::path(outputs_) / (std::string(file) + ".npy");
      const fs::path temporary = fs::path(path.string() + ".partial");
      const Buffer b = Buffer::borrow(t->dtype, t->box, t->data);
      std::ofstream out(temporary, std::ios::binary);
      const std::string bytes = tapestry::runtime::format_npy(b);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      out.close();
      if (!out) throw Error(temporary.string() + ": cannot be written");
      staged.emplace_back(temporary, path);
    }
  } catch (...) {
    for (const auto& s : staged) fs::remove(s.first, ec);
    throw;
  }
  for (const auto& [temporary, path] : staged) fs::rename(temporary, path);
}
@MPI_BODIES@
}  // namespace program

namespace {

int usage(const char* program) {
  std::fprintf(stderr,
               "usage: %s --inputs IN --outputs OUT [--repeat N]\n"
               "  --repeat N: run N times (inputs read once, outputs written after the last);\n"
               "  print the median time of the runs after the first\n",
               program);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string inputs, outputs;
  int repeat = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (i + 1 >= argc) return usage(argv[0]);
    if (a == "--inputs") {
      inputs = argv[++i];
    } else if (a == "--outputs") {
      outputs = argv[++i];
    } else if (a == "--repeat") {
      repeat = std::atoi(argv[++i]);
      if (repeat < 1) return usage(argv[0]);
    } else {
      return usage(argv[0]);
    }
  }
  if (inputs.empty() || outputs.empty()) return usage(argv[0]);
@MAIN_BODY@
}
)code";

constexpr std::string_view kMainSingle = R"code(  try {
    tapestry::runtime::limit_library_threads_to_one();
    program::Context ctx(inputs, outputs, 0);
    std::vector<double> times;  // of the runs after the first (which reads the inputs)
    for (int r = 0; r < repeat; ++r) {
      const auto start = std::chrono::steady_clock::now();
      ctx.first = r == 0;
      ctx.last = r + 1 == repeat;
      program::kRanks.functions[0](ctx);
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      if (r > 0) times.push_back(took.count());
    }
    if (!times.empty()) {
      std::sort(times.begin(), times.end());
      std::printf("median of %zu runs: %.6f s\n", times.size(), times[times.size() / 2]);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;)code";

constexpr std::string_view kMainMpi = R"code(  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int ranks = static_cast<int>(program::kRanks.functions.size());
  if (size != ranks) {
    if (rank == 0) std::fprintf(stderr, "error: generated for %d ranks, run on %d\n", ranks, size);
    MPI_Finalize();
    return 2;
  }
  try {
    tapestry::runtime::limit_library_threads_to_one();
    program::Context ctx(inputs, outputs, rank);
    for (const std::vector<int>& members : program::kRanks.groups) {
      const bool member = std::find(members.begin(), members.end(), rank) != members.end();
      MPI_Comm comm = MPI_COMM_NULL;
      MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED, rank, &comm);
      ctx.groups.push_back(comm);
    }
    std::vector<double> times;  // of the runs after the first (which reads the inputs)
    for (int r = 0; r < repeat; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      const auto start = std::chrono::steady_clock::now();
      ctx.first = r == 0;
      ctx.last = r + 1 == repeat;
      program::kRanks.functions[static_cast<std::size_t>(rank)](ctx);
      MPI_Barrier(MPI_COMM_WORLD);
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      if (r > 0) times.push_back(took.count());
    }
    if (!times.empty() && rank == 0) {
      std::sort(times.begin(), times.end());
      std::printf("median of %zu runs: %.6f s\n", times.size(), times[times.size() / 2]);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error on rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
  MPI_Finalize();
  return 0;)code";

constexpr std::string_view kMpiBodies = R"code(
namespace {

MPI_Datatype mpi_type(DType dtype) {
  if (dtype == DType::kFloat64) return MPI_DOUBLE;
  if (dtype == DType::kFloat32) return MPI_FLOAT;
  throw Error("a collective sum of " + std::string(tapestry::ir::dtype_name(dtype)));
}

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw Error(std::string("MPI: ") + what + " failed");
}

// Waits for a point-to-point request by polling it every 20 µs, not in MPI_Wait's spin: on a
// host with more ranks than free cores a spinning rank takes the core of the very rank it waits
// for (the MPI executor polls the same way). Collectives stay blocking calls: Open MPI advances
// them only inside MPI calls.
void wait_for(MPI_Request& request) {
  int done = 0;
  while (true) {
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done != 0) return;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

}  // namespace

Context::~Context() {
  for (MPI_Comm& c : groups) {
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
  }
}

void Context::receive(int id, const Range& box, DType dtype, int from) {
  Message& m = receives_.emplace_back(id, Message{box, {}}).second;
  m.staging.resize(static_cast<std::size_t>(box.size() * element_bytes(dtype)));
  check(MPI_Irecv(m.staging.data(), static_cast<int>(m.staging.size()), MPI_BYTE, from, id,
                  MPI_COMM_WORLD, &m.request),
        "MPI_Irecv");
}

void Context::wait(int id, const Tensor& into) {
  for (auto it = receives_.begin(); it != receives_.end(); ++it) {
    if (it->first != id) continue;
    wait_for(it->second.request);
    copy_box(it->second.staging.data(), it->second.box, into.data, into.box, it->second.box,
             into.dtype);
    receives_.erase(it);
    return;
  }
  throw Error("message " + std::to_string(id) + " was never posted");
}

void Context::send(int id, const Tensor& from, const Range& box, int to) {
  Message& m = sends_.emplace_back(Message{box, {}});
  m.staging.resize(static_cast<std::size_t>(box.size() * element_bytes(from.dtype)));
  copy_box(from.data, from.box, m.staging.data(), box, box, from.dtype);
  check(MPI_Isend(m.staging.data(), static_cast<int>(m.staging.size()), MPI_BYTE, to, id,
                  MPI_COMM_WORLD, &m.request),
        "MPI_Isend");
}

void Context::reduce(int group, const Tensor& from, const Range& box, int root, const Tensor* into,
                     const Range& result, std::initializer_list<Range> copies) {
  const std::int64_t bytes = box.size() * element_bytes(from.dtype);
  std::vector<std::byte> send(static_cast<std::size_t>(bytes));
  std::vector<std::byte> sum(into != nullptr ? static_cast<std::size_t>(bytes) : 0);
  copy_box(from.data, from.box, send.data(), box, box, from.dtype);
  const int count = static_cast<int>(box.size());
  if (root < 0) {
    check(MPI_Allreduce(send.data(), sum.data(), count, mpi_type(from.dtype), MPI_SUM,
                        groups[group]),
          "MPI_Allreduce");
  } else {
    check(MPI_Reduce(send.data(), into != nullptr ? sum.data() : nullptr, count,
                     mpi_type(from.dtype), MPI_SUM, root, groups[group]),
          "MPI_Reduce");
  }
  for (const Range& c : copies) copy_box(sum.data(), result, into->data, into->box, c, into->dtype);
}

void Context::reduce_scatter(int group, const Tensor& from, const Range& box,
                             std::initializer_list<Range> slices, int member, const Tensor& into) {
  // The send buffer: box's pieces block × slice i, one after another in member order.
  std::vector<std::byte> send(static_cast<std::size_t>(box.size() * element_bytes(from.dtype)));
  std::vector<int> counts;
  std::int64_t offset = 0;
  Range mine;
  int i = 0;
  for (const Range& slice : slices) {
    const Range piece(box.start().slice(0, 1).concat(slice.start()),
                      box.end().slice(0, 1).concat(slice.end()));
    copy_box(from.data, from.box, send.data() + offset * element_bytes(from.dtype), piece, piece,
             from.dtype);
    offset += piece.size();
    counts.push_back(static_cast<int>(slice.size()));
    if (i++ == member) mine = slice;
  }
  std::vector<std::byte> sum(static_cast<std::size_t>(mine.size() * element_bytes(from.dtype)));
  check(MPI_Reduce_scatter(send.data(), sum.data(), counts.data(), mpi_type(from.dtype), MPI_SUM,
                           groups[group]),
        "MPI_Reduce_scatter");
  copy_box(sum.data(), mine, into.data, into.box, mine, into.dtype);
}

void Context::all_gather(int group, const Tensor& tensor, std::initializer_list<Range> boxes,
                         int member) {
  std::vector<int> counts, displacements;
  std::int64_t total = 0;
  for (const Range& b : boxes) {
    displacements.push_back(static_cast<int>(total));
    counts.push_back(static_cast<int>(b.size() * element_bytes(tensor.dtype)));
    total += counts.back();
  }
  const Range& own = boxes.begin()[member];
  std::vector<std::byte> send(static_cast<std::size_t>(counts[static_cast<std::size_t>(member)]));
  copy_box(tensor.data, tensor.box, send.data(), own, own, tensor.dtype);
  std::vector<std::byte> all(static_cast<std::size_t>(total));
  check(MPI_Allgatherv(send.data(), counts[static_cast<std::size_t>(member)], MPI_BYTE, all.data(),
                       counts.data(), displacements.data(), MPI_BYTE, groups[group]),
        "MPI_Allgatherv");
  int i = 0;
  for (const Range& b : boxes) {
    if (i != member) {
      copy_box(all.data() + displacements[static_cast<std::size_t>(i)], b, tensor.data, tensor.box,
               b, tensor.dtype);
    }
    ++i;
  }
}

void Context::finish() {
  for (Message& m : sends_) wait_for(m.request);
  sends_.clear();
  if (!receives_.empty()) throw Error("a message was received but never used");
}
)code";

std::string replace(std::string text, std::string_view key, std::string_view value) {
  const std::size_t at = text.find(key);
  if (at != std::string::npos) text.replace(at, key.size(), value);
  return text;
}

}  // namespace

std::string cpp_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string commented(std::string_view lead, std::string_view text) {
  std::string out;
  std::string line(lead);
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(start, end - start);
    if (line.size() > lead.size() && line.size() + 1 + word.size() > 100) {
      out += line + "\n";
      line = std::string(lead) + "   ";
    } else if (line.size() > lead.size() || !line.empty()) {
      line += ' ';
    }
    line += word;
    start = end + 1;
  }
  return out + line + "\n";
}

std::string cpp_cmake(std::uint32_t ranks, const CppOptions& options) {
  std::string out = commented("#", fmt::format("Generated by `{}`.", options.command));
  out += commented("#", fmt::format("Strategy: {}", options.strategy));
  out += fmt::format(R"cmake(#
# Build: cmake -S DIR -B DIR/build -G Ninja -DCMAKE_PREFIX_PATH=<where Tapestry is installed>
#        cmake --build DIR/build
cmake_minimum_required(VERSION 3.25)
project(tapestry_program LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release)
endif()
find_program(PROGRAM_CCACHE ccache)
if(PROGRAM_CCACHE)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${{PROGRAM_CCACHE}})
endif()
# The kernel library: tapestry_runtime (the fast kernels on oneDNN and OpenBLAS) and its headers.
find_package(Tapestry REQUIRED COMPONENTS runtime)
add_executable(program main.cpp ranks.cpp{})
target_link_libraries(program PRIVATE Tapestry::runtime)
)cmake",
                     [&] {
                       std::string files;
                       for (std::uint32_t r = 0; r < ranks; ++r)
                         files += fmt::format(" rank{}.cpp", r);
                       return files;
                     }());
  if (ranks > 1) {
    out += R"cmake(# The ranks' messages and collectives: MPI's C API.
set(MPI_CXX_SKIP_MPICXX ON)
find_package(MPI REQUIRED COMPONENTS CXX)
target_link_libraries(program PRIVATE MPI::MPI_CXX)
)cmake";
  }
  return out;
}

std::string cpp_program_header(std::uint32_t ranks) {
  std::string text =
      "// program.h: what the rank files (rank<i>.cpp) use; bodies in main.cpp. The same for\n"
      "// every program of one rank (no MPI) or of several (MPI).\n";
  std::string body(kHeaderCommon);
  body = replace(body, "@MPI_INCLUDE@", ranks > 1 ? "\n#include <mpi.h>\n" : "");
  body = replace(body, "@MPI_CONTEXT@", ranks > 1 ? kMpiContext : "");
  body = replace(body, "@MPI_MEMBERS@", ranks > 1 ? kMpiMembers : "");
  return text + body;
}

std::string cpp_main(std::uint32_t ranks) {
  std::string text = fmt::format(
      "// main.cpp: the helpers' bodies (program.h) and main. The same for every program of {}.\n"
      "// Run: {}DIR/build/program --inputs IN --outputs OUT [--repeat N]\n",
      ranks > 1 ? "several ranks (MPI)" : "one rank", ranks > 1 ? "mpirun -np N " : "");
  std::string body(kMainCommon);
  body = replace(body, "@MPI_BODIES@",
                 ranks > 1 ? std::string(kMpiBodies) : "\nContext::~Context() = default;\n");
  return text + replace(body, "@MAIN_BODY@", ranks > 1 ? kMainMpi : kMainSingle);
}

std::string cpp_ranks(std::uint32_t ranks, const std::vector<std::vector<std::uint32_t>>& groups,
                      const std::vector<runtime::BodySource>& kernels, const CppOptions& options) {
  std::string text = commented("//", fmt::format("Generated by `{}`.", options.command));
  text += commented("//", fmt::format("Strategy: {}", options.strategy));
  text += "#include \"program.h\"\n\nnamespace program {\n\n";
  std::vector<std::string> functions;
  for (std::uint32_t r = 0; r < ranks; ++r) {
    text += fmt::format("void rank{}(Context& ctx);\n", r);
    functions.push_back(fmt::format("rank{}", r));
  }
  std::vector<std::string> rows;
  for (const std::vector<std::uint32_t>& members : groups) {
    rows.push_back(fmt::format("{{{}}}", fmt::join(members, ", ")));
  }
  std::vector<std::string> bodies;
  for (const runtime::BodySource& k : kernels) {
    std::vector<std::string> params;
    for (const auto& [name, fallback] : k.params) {
      params.push_back(fmt::format("{{{}, {}}}", cpp_string(name), cpp_string(fallback)));
    }
    std::vector<std::string> inputs;
    for (const std::string& in : k.inputs) inputs.push_back(cpp_string(in));
    bodies.push_back(fmt::format("\n  {{{}, {}, {{{}}}, {{{}}}}}", cpp_string(k.name),
                                 cpp_string(k.body), fmt::join(inputs, ", "),
                                 fmt::join(params, ", ")));
  }
  text += fmt::format(
      "\n// The ranks' functions, each collective's members (a communicator each, split by every\n"
      "// rank in this order), and the kernel files' kernels the ranks call: name, body, inputs,\n"
      "// params with their defaults (JSON).\nconst Ranks kRanks{{{{{}}}, {{{}}}, {{{}}}}};\n\n}}  "
      "// namespace program\n",
      fmt::join(functions, ", "), fmt::join(rows, ", "), fmt::join(bodies, ","));
  return text;
}

}  // namespace tapestry::codegen::detail
