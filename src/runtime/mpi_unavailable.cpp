// The MPI executor of a build without MPI (CMake did not find it, or TAPESTRY_MPI=OFF): every
// entry point says so (mpi_executor.h).
#include "tapestry/runtime/mpi_executor.h"

#include "tapestry/support/error.h"

namespace tapestry::runtime {

namespace detail {
struct MpiProgram {};
}  // namespace detail

struct MpiSession::Posts {};

namespace {
[[noreturn]] void unavailable() {
  throw Error(
      "this tapestry was built without MPI (CMake's find_package(MPI) found none): install "
      "libopenmpi-dev and openmpi-bin (scripts/install-deps.sh) and rebuild");
}
}  // namespace

bool mpi_built() {
  return false;
}

MpiSession::MpiSession() {
  unavailable();
}
MpiSession::~MpiSession() = default;
std::optional<RankFailure> MpiSession::agree(const std::optional<std::string>& /*error*/) const {
  unavailable();
}
std::vector<std::string> MpiSession::gather(const std::string& /*text*/) const {
  unavailable();
}
std::string MpiSession::broadcast(const std::string& /*text*/) const {
  unavailable();
}
void MpiSession::barrier() const {
  unavailable();
}
void MpiSession::post(const std::string& /*text*/) {
  unavailable();
}
std::vector<std::string> MpiSession::collect() {
  unavailable();
}

MpiExecutor::MpiExecutor(const MpiSession& session, const ir::Graph& graph,
                         const RankSchedule& /*schedule*/, MpiExecutorOptions /*options*/)
    : session_(session), graph_(graph) {
  unavailable();
}
MpiExecutor::~MpiExecutor() = default;
std::vector<NeededInput> MpiExecutor::inputs_needed() const {
  unavailable();
}
std::vector<CollectiveRecord> MpiExecutor::collectives() const {
  unavailable();
}
std::size_t MpiExecutor::application_count() const {
  unavailable();
}
std::size_t MpiExecutor::messages_sent() const {
  unavailable();
}
std::size_t MpiExecutor::messages_received() const {
  unavailable();
}
MpiExecutor::Result MpiExecutor::run(BufferMap /*inputs*/) const {
  unavailable();
}

}  // namespace tapestry::runtime
