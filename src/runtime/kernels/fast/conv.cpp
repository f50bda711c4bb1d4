// Fast conv2d: not written yet; conv2d runs the reference kernel (fast_kernels() registers it
// under its name). Planned: im2col of each shard into a scratch block, then one GEMM.
#include "fast_support.h"

namespace tapestry::runtime::fast {

void register_fast_conv(KernelRegistry& /*registry*/) {}

}  // namespace tapestry::runtime::fast
