// The row kernels on the GPU (rows.h): sum, max, reduce, sum_to and the max/avg pools (folds in the
// CPU's order, one thread per output cell), mean and variance (one thread per row), softmax (one
// block per row).
//
// Each supports a call when x and the result share a dtype the kernel takes (the folds: every
// dtype; the others: floats), the result has one element per index point (softmax: the rows of
// x), x's cells are single elements or windows (folds: any, up to kMaxInner reduced dims and
// window dims together; the others: a row along the reduced axis), and the outer loop collapses
// to at most kMaxRank dims.
#pragma once

#include "device_kernels.h"

namespace tapestry::gpu::kernels {

struct RowsLaunch;
/// Tests without a GPU: row launches go to `hook` (interpreted on host memory) when it is set.
using RowsHook = int (*)(const RowsLaunch& l);
void set_rows_hook(RowsHook hook);

/// Registers sum, max, reduce, sum_to, the pools, mean, variance and softmax.
void register_row_kernels(DeviceKernels& kernels);

}  // namespace tapestry::gpu::kernels
