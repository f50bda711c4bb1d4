// The transcript runner itself: parsing, the `…` wildcard, exit codes — including the
// transcripts it must reject, so that a passing docs test means something.
#include "docs/cram.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace tapestry::doctest {
namespace {

TEST(ParseBlocks, OnlyMarkedBlocksWithCommandsExitCodesAndContinuations) {
  const std::string md =
      "text\n"
      "```\n$ not run\nout\n```\n"
      "```console doctest\n"
      "$ echo a   (exit 3)\n"
      "a\n"
      "…\n"
      "\n"
      "$ cat <<EOF\n"
      "> x\n"
      "> EOF\n"
      "x\n"
      "\n"
      "```\n"
      "```sh\n$ also not run\n```\n";
  const std::vector<Block> blocks = parse_blocks(md);
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0].line, 6);
  ASSERT_EQ(blocks[0].commands.size(), 2u);
  EXPECT_EQ(blocks[0].commands[0].text, "echo a");
  EXPECT_EQ(blocks[0].commands[0].expected_exit, 3);
  EXPECT_EQ(blocks[0].commands[0].line, 7);
  EXPECT_EQ(blocks[0].commands[0].expected, (std::vector<std::string>{"a", "…"}));
  EXPECT_EQ(blocks[0].commands[1].text, "cat <<EOF\nx\nEOF");
  EXPECT_EQ(blocks[0].commands[1].expected_exit, 0);
  EXPECT_EQ(blocks[0].commands[1].expected, (std::vector<std::string>{"x"}));
}

TEST(ParseBlocks, RejectsMarkedBlocksThatRunNothingAndUnclosedFences) {
  EXPECT_THROW(parse_blocks("```console doctest\nno prompt\n```\n"), std::runtime_error);
  EXPECT_THROW(parse_blocks("```console doctest\n\n```\n"), std::runtime_error);
  EXPECT_THROW(parse_blocks("```console doctest\n$ echo\n"), std::runtime_error);
  // The marker is a word of the info string, not a substring of one.
  EXPECT_TRUE(parse_blocks("```console doctests\nno prompt\n```\n").empty());
  // One space before (exit N) is part of the command.
  EXPECT_EQ(parse_blocks("```console doctest\n$ echo (exit 1)\n```\n")[0].commands[0].expected_exit,
            0);
}

TEST(LineMatches, EllipsisIsAnyTextWithinTheLine) {
  EXPECT_TRUE(line_matches("wall … ms", "wall 3.5 ms"));
  EXPECT_TRUE(line_matches("wall … ms", "wall  ms"));
  EXPECT_TRUE(line_matches("…", "anything"));
  EXPECT_TRUE(line_matches("a…b…c", "a-b-b-c"));
  EXPECT_TRUE(line_matches("0.00e+00…5.22e-06", "0.00e+00…5.22e-06"));  // literal … matches too
  EXPECT_FALSE(line_matches("wall … ms", "wall 3.5 s"));
  EXPECT_FALSE(line_matches("wall … ms", "xwall 3.5 ms"));
  EXPECT_FALSE(line_matches("a…b…c", "a-c-b"));
  EXPECT_FALSE(line_matches("ab…ba", "aba"));  // prefix and suffix may not overlap
  EXPECT_FALSE(line_matches("exact", "exact "));
  EXPECT_FALSE(line_matches("", "x"));
}

TEST(Matches, EllipsisLineIsAnyNumberOfLines) {
  using V = std::vector<std::string>;
  EXPECT_TRUE(matches(V{"a", "…", "z"}, V{"a", "z"}));
  EXPECT_TRUE(matches(V{"a", "…", "z"}, V{"a", "b", "c", "z"}));
  EXPECT_TRUE(matches(V{"…"}, V{}));
  EXPECT_TRUE(matches(V{"…", "PASS …"}, V{"x", "PASS Y", "PASS Y"}));
  EXPECT_TRUE(matches(V{}, V{}));
  EXPECT_FALSE(matches(V{}, V{"unexpected"}));
  EXPECT_FALSE(matches(V{"a"}, V{}));
  EXPECT_FALSE(matches(V{"a", "…", "z"}, V{"a", "b"}));
  EXPECT_FALSE(matches(V{"a", "…"}, V{"b", "a"}));
  EXPECT_FALSE(matches(V{"a", "b"}, V{"a", "b", "c"}));  // extra output is a mismatch
}

TEST(RunShell, MergesStreamsReportsExitCodesAndRunsInTheDirectory) {
  const Ran ran = run_shell("echo out; echo err >&2; pwd; exit 3", "/tmp");
  EXPECT_EQ(ran.exit_code, 3);
  EXPECT_EQ(ran.output, (std::vector<std::string>{"out", "err", "/tmp"}));
  // Quotes and here-documents pass through unharmed.
  const Ran quoted = run_shell("cat <<'EOF'\nit's \"$HOME\"\nEOF", "/");
  EXPECT_EQ(quoted.exit_code, 0);
  EXPECT_EQ(quoted.output, (std::vector<std::string>{"it's \"$HOME\""}));
  EXPECT_EQ(run_shell("read x; echo [$x]", "/").output,
            (std::vector<std::string>{"[]"}));  // stdin is empty
}

TEST(DescribeMismatch, NamesLineCommandAndExitCodes) {
  const Command c{.line = 12, .text = "tapestry x", .expected_exit = 0, .expected = {"ok"}};
  const std::string text = describe_mismatch(c, {.exit_code = 2, .output = {"error"}});
  EXPECT_NE(text.find("line 12: $ tapestry x"), std::string::npos);
  EXPECT_NE(text.find("exit code 2, expected 0"), std::string::npos);
  EXPECT_NE(text.find("--- actual\nerror"), std::string::npos);
}

}  // namespace
}  // namespace tapestry::doctest
