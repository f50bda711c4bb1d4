#include "docs/cram.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace tapestry::doctest {

namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool is_fence(const std::string& line) {
  return line.rfind("```", 0) == 0;
}

// Whether the info string of an opening fence (after the backticks) has the word `doctest`.
bool is_marked(const std::string& fence) {
  std::istringstream words(fence.substr(3));
  for (std::string word; words >> word;) {
    if (word == kMarker) return true;
  }
  return false;
}

// Splits a trailing `  (exit N)` off a command.
void take_exit_code(Command& command) {
  static const std::regex kExit(R"(^(.*\S)\s{2,}\(exit (\d+)\)\s*$)");
  std::smatch m;
  if (std::regex_match(command.text, m, kExit)) {
    command.expected_exit = std::stoi(m[2]);
    command.text = m[1];
  }
}

Block parse_block(const std::vector<std::string>& lines, int first_line) {
  Block block{.line = first_line, .commands = {}};
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    const int at = first_line + 1 + static_cast<int>(i);
    if (line.rfind("$ ", 0) == 0) {
      block.commands.push_back(
          {.line = at, .text = line.substr(2), .expected_exit = 0, .expected = {}});
      take_exit_code(block.commands.back());
    } else if (line.rfind("> ", 0) == 0 && !block.commands.empty() &&
               block.commands.back().expected.empty()) {
      block.commands.back().text += "\n" + line.substr(2);
    } else if (block.commands.empty()) {
      if (!line.empty()) {
        throw std::runtime_error(fmt::format(
            "line {}: a block marked '{}' must start with a `$ ` command", at, kMarker));
      }
    } else {
      block.commands.back().expected.push_back(line);
    }
  }
  for (Command& c : block.commands) {  // blank lines between commands are layout
    while (!c.expected.empty() && c.expected.back().empty()) c.expected.pop_back();
  }
  if (block.commands.empty()) {
    throw std::runtime_error(
        fmt::format("line {}: a block marked '{}' has no command", first_line, kMarker));
  }
  return block;
}

}  // namespace

std::vector<Block> parse_blocks(const std::string& markdown) {
  const std::vector<std::string> lines = split_lines(markdown);
  std::vector<Block> blocks;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (!is_fence(lines[i])) continue;
    const std::size_t open = i;
    std::size_t close = open + 1;
    while (close < lines.size() && !is_fence(lines[close])) ++close;
    if (close == lines.size()) {
      throw std::runtime_error(fmt::format("line {}: unclosed code fence", open + 1));
    }
    if (is_marked(lines[open])) {
      blocks.push_back(parse_block({lines.begin() + static_cast<std::ptrdiff_t>(open) + 1,
                                    lines.begin() + static_cast<std::ptrdiff_t>(close)},
                                   static_cast<int>(open) + 1));
    }
    i = close;
  }
  return blocks;
}

bool line_matches(const std::string& expected, const std::string& actual) {
  const std::string ellipsis = kEllipsis;
  std::vector<std::string> parts;  // the literal pieces between the ellipses
  std::size_t from = 0;
  for (std::size_t at; (at = expected.find(ellipsis, from)) != std::string::npos;) {
    parts.push_back(expected.substr(from, at - from));
    from = at + ellipsis.size();
  }
  parts.push_back(expected.substr(from));
  if (parts.size() == 1) return expected == actual;
  // The first piece is a prefix, the last a suffix, the others in order between (greedy-left
  // is exact for literal pieces separated by wildcards).
  const std::string& head = parts.front();
  const std::string& tail = parts.back();
  if (actual.size() < head.size() + tail.size()) return false;
  if (actual.compare(0, head.size(), head) != 0) return false;
  if (actual.compare(actual.size() - tail.size(), tail.size(), tail) != 0) return false;
  std::size_t pos = head.size();
  const std::size_t end = actual.size() - tail.size();
  for (std::size_t k = 1; k + 1 < parts.size(); ++k) {
    const std::size_t found = actual.find(parts[k], pos);
    if (found == std::string::npos || found + parts[k].size() > end) return false;
    pos = found + parts[k].size();
  }
  return true;
}

bool matches(const std::vector<std::string>& expected, const std::vector<std::string>& actual) {
  // Backtracking over `…` lines; transcripts are short, so the worst case does not matter.
  const auto match_from = [&](const auto& self, std::size_t e, std::size_t a) -> bool {
    if (e == expected.size()) return a == actual.size();
    if (expected[e] == kEllipsis) {
      for (std::size_t skip = a; skip <= actual.size(); ++skip) {
        if (self(self, e + 1, skip)) return true;
      }
      return false;
    }
    return a < actual.size() && line_matches(expected[e], actual[a]) && self(self, e + 1, a + 1);
  };
  return match_from(match_from, 0, 0);
}

Ran run_shell(const std::string& command, const std::string& directory) {
  // The directory and the command are passed to sh as positional parameters, never spliced
  // into the script, so no quoting can go wrong.
  // stdin is an empty pipe rather than /dev/null, which need not be a device in a container.
  const std::string script = "cd \"$1\" && : | /bin/sh -c \"$2\" 2>&1";
  auto quote = [](const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
  };
  const std::string full =
      fmt::format("/bin/sh -c {} doctest {} {}", quote(script), quote(directory), quote(command));
  FILE* pipe = popen(full.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("popen failed");
  std::string output;
  std::array<char, 4096> chunk{};
  for (std::size_t n = 0; (n = std::fread(chunk.data(), 1, chunk.size(), pipe)) > 0;) {
    output.append(chunk.data(), n);
  }
  const int status = pclose(pipe);
  Ran ran{.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
          .output = split_lines(output)};
  while (!ran.output.empty() && ran.output.back().empty()) ran.output.pop_back();
  return ran;
}

std::string describe_mismatch(const Command& command, const Ran& ran) {
  std::string out = fmt::format("line {}: $ {}\n", command.line, command.text);
  if (ran.exit_code != command.expected_exit) {
    out += fmt::format("exit code {}, expected {}\n", ran.exit_code, command.expected_exit);
  }
  out += "--- expected\n";
  for (const std::string& l : command.expected) out += l + "\n";
  out += "--- actual\n";
  for (const std::string& l : ran.output) out += l + "\n";
  return out;
}

}  // namespace tapestry::doctest
