// Executable documentation: the transcripts of README.md and docs/*.md, run and compared.
//
// A fenced block whose info string carries the word `doctest` is a transcript, in the spirit of
// cram tests and Python's doctest:
//
//   ```console doctest
//   $ tapestry project --ipf '{"affineMap":{"projection":[[2]],"offset":[0]},"shape":[3]}' --index
//   'zr[0:4]' zr[0:9] $ tapestry run examples/linear_relu.tap --split Y/linear.rows=2      (exit 2)
//   tapestry run: error: …no index dimension 'rows'…
//   ```
//
// * `$ ` starts a command; following lines starting with `> ` continue it (a here-document).
//   The command runs under `/bin/sh -c`, its stdout and stderr merged, in a scratch directory
//   shared by every block of one Markdown file (so a block can use the files an earlier one
//   wrote). Commands ending in `(exit N)` after two or more spaces must exit with N; all others
//   with 0.
// * The lines up to the next command are its expected output, compared line by line; blank
//   lines at the end of the expected and of the actual output are ignored (layout).
// * Volatile parts are elided with `…`: a line that is only `…` matches any number of lines
//   (none included); `…` inside a line matches any text within that line. Nothing else is a
//   wildcard.
//
// Blocks without the marker are prose (abridged, long-running, or machine-specific output) and
// are never run.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tapestry::doctest {

inline constexpr const char* kMarker = "doctest";
inline constexpr const char* kEllipsis = "…";

/// One `$ ` command of a transcript and what it must print.
struct Command {
  int line = 0;                       // 1-based line of the `$ ` in the Markdown file
  std::string text;                   // the shell command (continuation lines joined by '\n')
  int expected_exit = 0;              // from a trailing `(exit N)`
  std::vector<std::string> expected;  // expected output lines
};

/// A fenced block marked `doctest`.
struct Block {
  int line = 0;  // 1-based line of the opening fence
  std::vector<Command> commands;
};

/// Every block marked `doctest` in `markdown`, in order. A block marked `doctest` whose first
/// non-empty line is not a command is an error (std::runtime_error naming the line): a marked
/// block must run something.
std::vector<Block> parse_blocks(const std::string& markdown);

/// Whether `actual` (lines, no trailing newlines) matches `expected` under the rules above.
bool matches(const std::vector<std::string>& expected, const std::vector<std::string>& actual);

/// Whether one line matches one expected line (`…` inside it matching any text).
bool line_matches(const std::string& expected, const std::string& actual);

/// The result of running a command.
struct Ran {
  int exit_code = 0;
  std::vector<std::string> output;  // stdout and stderr merged, split into lines
};

/// Runs `command` with `/bin/sh -c` in `directory`, stdin empty.
Ran run_shell(const std::string& command, const std::string& directory);

/// A readable account of a mismatch: the command, expected and actual output, exit codes.
std::string describe_mismatch(const Command& command, const Ran& ran);

}  // namespace tapestry::doctest
