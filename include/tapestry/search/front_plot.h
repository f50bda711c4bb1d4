// A picture of a Pareto front: SVG, one panel per pair of objectives (the 2-D projections).
//
// Each panel plots every front member as a point named by its place in the front ("p0", "p1",
// …: the names of the front JSON and of `tapestry optimize`'s table), with the members the
// projection keeps undominated joined by a step line. Axes carry the objective and its unit,
// scaled for reading (time in µs, ms or s; memory in KiB, MiB or GiB; devices; energy in J), with
// round ticks. One objective: a single panel of its value per member.
//
// Written directly (no plotting library): the picture is a few hundred elements, and the binary
// then draws it anywhere, with no Python or fonts to install; `rsvg-convert front.svg -o
// front.png` makes a PNG.
//
//   write_file_atomically("front.svg", front_svg(archive, "examples/mlp.tap on h100x8"));
#pragma once

#include <string>
#include <string_view>

#include "tapestry/search/archive.h"

namespace tapestry::search {

/// The SVG document (file comment). An empty front gives a panel saying so.
std::string front_svg(const ParetoArchive& archive, std::string_view title);

}  // namespace tapestry::search
