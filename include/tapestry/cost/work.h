// Work: what one application asks of a device — arithmetic and memory traffic.
//
// FLOPs are counted per point of the application's index box, as each kernel's YAML declares in
// its `facts:` (metakernel/kernel_facts.h, docs/metakernels.md): `flops` per index point, times
// the cells of the `per_point` port's box for one point when the kernel names one. The built-ins
// (an index point of matmul/linear/conv2d is one multiply-add over the reduction dims, so 2):
//
//   kernel                                   FLOPs per index point
//   matmul, linear                           2
//   conv2d                                   2 · kh · kw (per_point w: the window)
//   add sub mul div maximum relu neg         1
//   bias_add sum max reduce                  1
//   exp tanh sigmoid sqrt                    4     (estimates: a few FMAs of a polynomial)
//   gelu                                     8
//   softmax                                  5 · the softmax axis (per_point result: one point
//                                                  is a row: max, subtract, exp, sum, divide)
//   mean, max_pool2d, avg_pool2d             1 · the cells of x's window (the row, k × k)
//   variance                                 4 · the row (mean, deviation, square, sum)
//   transpose permute reshape slice pad      0     (data movement only)
//   fused                                    the sum over its stages, each over its own box
//   a kernel without facts                   1     (kUnknownKernelFacts; loading the graph warns:
//                                                  kernel-facts-missing)
//
// Bytes are the application's own boxes: every input selection's box (read) and every output
// selection's box (written), times the element size. A fused application's intermediates stay in
// a block of cache, so only its external boxes count. The dtype is the element type of the first
// output (what the arithmetic runs in).
//
//   Work w = application_work(graph, app);   // linear over batch 512, out 512, in 512:
//   w.flops == 2.0 * 512 * 512 * 512;        // 268,435,456
//   w.bytes_read == (512*512 + 512*512 + 512) * 4;  w.bytes_written == 512*512*4
#pragma once

#include <string_view>

#include "tapestry/cost/placement.h"
#include "tapestry/ir/graph.h"

namespace tapestry::cost {

/// FLOPs per index point of `kernel` (its facts' `flops`; 1 for a kernel without facts).
double flops_per_point(std::string_view kernel);

/// The work of application `app` of `graph`.
Work application_work(const ir::Graph& graph, ir::ApplicationId app);

}  // namespace tapestry::cost
