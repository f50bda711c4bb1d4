// The documentation is part of the product, so it is tested:
//  * every block marked `doctest` in README.md and docs/*.md runs and prints what it shows
//    (the rules: tests/docs/cram.h, and README.md, "Documentation");
//  * every relative link of every Markdown file points at a file (and heading) the repository
//    holds, and every repository path a Markdown file names in backticks exists;
//  * nothing in the repository refers to files outside it.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "docs/cram.h"

namespace tapestry::doctest {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = TAPESTRY_SOURCE_DIR;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The Markdown files whose transcripts are run: README.md and docs/*.md.
std::vector<std::string> documented_files() {
  std::vector<std::string> files{"README.md"};
  for (const auto& entry : fs::directory_iterator(kRoot / "docs")) {
    if (entry.path().extension() == ".md") {
      files.push_back(fs::relative(entry.path(), kRoot).string());
    }
  }
  std::sort(files.begin() + 1, files.end());
  return files;
}

// Every file of the source tree, skipping build trees and hidden directories.
std::vector<fs::path> repository_files() {
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(kRoot); it != fs::recursive_directory_iterator();
       ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() && (name.starts_with(".") || name == "build")) {
      it.disable_recursion_pending();
    } else if (it->is_regular_file() && name != ".git") {  // a worktree's .git is a file
      files.push_back(it->path());
    }
  }
  return files;
}

// A scratch directory in which the repository's folders appear as symlinks, so transcripts
// read `examples/…` and write wherever they like without touching the tree.
fs::path make_scratch() {
  std::string pattern = (fs::temp_directory_path() / "tapestry-doctest-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  const fs::path scratch = pattern;
  for (const char* dir :
       {"examples", "tests", "kernels", "targets", "docs", "bench", "scripts", "include"}) {
    fs::create_directory_symlink(kRoot / dir, scratch / dir);
  }
  return scratch;
}

class Transcripts : public testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    // `tapestry` is the binary just built; user environment must not change its output.
    const char* inherited = getenv("PATH");
    const std::string path = fs::path(TAPESTRY_BINARY).parent_path().string() + ":" +
                             (inherited != nullptr ? inherited : "/usr/bin:/bin");
    setenv("PATH", path.c_str(), 1);
    unsetenv("TAPESTRY_KERNELS");
    unsetenv("TAPESTRY_PLUGINS");
    setenv("LC_ALL", "C.UTF-8", 1);
  }
};

TEST_P(Transcripts, PrintWhatTheyShow) {
  const std::vector<Block> blocks = parse_blocks(read_file(kRoot / GetParam()));
  const fs::path scratch = make_scratch();
  int commands = 0;
  for (const Block& block : blocks) {
    for (const Command& command : block.commands) {
      const Ran ran = run_shell(command.text, scratch.string());
      ++commands;
      EXPECT_TRUE(ran.exit_code == command.expected_exit && matches(command.expected, ran.output))
          << GetParam() << ":" << describe_mismatch(command, ran);
    }
  }
  fs::remove_all(scratch);
  RecordProperty("commands", commands);
}

INSTANTIATE_TEST_SUITE_P(Docs, Transcripts, testing::ValuesIn(documented_files()),
                         [](const testing::TestParamInfo<std::string>& param) {
                           std::string name = param.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

// The transcripts must cover the newcomer's path, not be a token gesture: every command table
// of the README (project, run, verify, shard) and the tutorials of docs/ have runnable blocks.
TEST(Transcripts, CoverTheReadmeAndTheDocs) {
  std::set<std::string> with_blocks;
  int commands = 0;
  for (const std::string& file : documented_files()) {
    const std::vector<Block> blocks = parse_blocks(read_file(kRoot / file));
    if (!blocks.empty()) with_blocks.insert(file);
    for (const Block& b : blocks) commands += static_cast<int>(b.commands.size());
  }
  for (const char* file : {"README.md", "docs/language.md", "docs/metakernels.md",
                           "docs/rewrites.md", "docs/runtime.md", "docs/cost.md"}) {
    EXPECT_TRUE(with_blocks.count(file)) << file << " has no block marked doctest";
  }
  EXPECT_GE(commands, 40);
}

// GitHub's anchor of a heading: lower case, punctuation other than '-' and '_' dropped, spaces
// become '-'.
std::string slug(const std::string& heading) {
  std::string out;
  for (unsigned char c : heading) {
    if (std::isalnum(c) || c == '-' || c == '_' || c >= 0x80) {
      out += static_cast<char>(std::tolower(c));
    } else if (c == ' ') {
      out += '-';
    }
  }
  return out;
}

// The Markdown text outside fenced code blocks and inline code spans, and its headings' anchors.
struct Prose {
  std::string text;
  std::set<std::string> anchors;
};

Prose prose_of(const std::string& markdown) {
  Prose prose;
  std::istringstream in(markdown);
  bool fenced = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("```", 0) == 0) {
      fenced = !fenced;
      continue;
    }
    if (fenced) continue;
    if (line.rfind("#", 0) == 0) {
      const std::size_t text = line.find_first_not_of('#');
      if (text != std::string::npos) prose.anchors.insert(slug(line.substr(text + 1)));
    }
    prose.text += line + "\n";
  }
  return prose;
}

std::vector<fs::path> markdown_files() {
  std::vector<fs::path> out;
  for (const fs::path& p : repository_files()) {
    if (p.extension() == ".md") out.push_back(p);
  }
  return out;
}

TEST(Links, EveryRelativeLinkPointsIntoTheRepository) {
  static const std::regex kLink(R"(\]\(([^)\s]+)\))");
  int checked = 0;
  for (const fs::path& md : markdown_files()) {
    const Prose prose = prose_of(read_file(md));
    // Inline code spans are not links.
    const std::string text = std::regex_replace(prose.text, std::regex("`[^`\n]*`"), "");
    for (std::sregex_iterator it(text.begin(), text.end(), kLink), end; it != end; ++it) {
      const std::string target = (*it)[1];
      if (target.find("://") != std::string::npos || target.starts_with("mailto:")) continue;
      const std::size_t hash = target.find('#');
      const std::string file = target.substr(0, hash);
      const std::string anchor = hash == std::string::npos ? "" : target.substr(hash + 1);
      const fs::path resolved = file.empty() ? md : md.parent_path() / file;
      ++checked;
      const std::string where = fs::relative(md, kRoot).string() + ": (" + target + ")";
      if (!fs::exists(resolved)) {
        ADD_FAILURE() << where << " names a file the repository does not hold";
      } else if (!anchor.empty() && resolved.extension() == ".md" &&
                 !prose_of(read_file(resolved)).anchors.count(anchor)) {
        ADD_FAILURE() << where << " names a heading " << resolved.filename() << " lacks";
      } else if (fs::weakly_canonical(resolved).string().rfind(kRoot.string(), 0) != 0) {
        ADD_FAILURE() << where << " leaves the repository";
      }
    }
  }
  EXPECT_GE(checked, 30);  // the README alone links every docs page
}

// A path in backticks that starts with a folder of the repository (`examples/plans/x.json`)
// must exist. Placeholders (<name>, *, …) and paths the transcripts create are skipped.
TEST(Links, EveryRepositoryPathInTheProseExists) {
  static const std::regex kPath(
      R"(`((?:docs|examples|tests|src|include|kernels|targets|bench|scripts|cmake)/[A-Za-z0-9_./+-]*)[^`]*`)");
  for (const fs::path& md : markdown_files()) {
    const std::string text = prose_of(read_file(md)).text;
    for (std::sregex_iterator it(text.begin(), text.end(), kPath), end; it != end; ++it) {
      const std::string path = (*it)[1];
      const std::string whole = (*it)[0];
      if (whole.find_first_of("<*{") != std::string::npos || whole.find("…") != std::string::npos)
        continue;
      // `bench/cost_bench` names the program built from bench/cost_bench.cpp.
      EXPECT_TRUE(fs::exists(kRoot / path) || fs::exists(kRoot / (path + ".cpp")))
          << fs::relative(md, kRoot).string() << " names " << path << ", which does not exist";
    }
  }
}

// No file refers to a design note, a work path or a sibling directory outside the repository.
TEST(Links, NothingRefersToFilesOutsideTheRepository) {
  // Spelt in pieces so that this file does not match itself.
  const std::vector<std::string> forbidden = {
      std::string("DESIGN") + ".md", std::string("/wo") + "rk/", std::string("../sha") + "red"};
  int scanned = 0;
  for (const fs::path& file : repository_files()) {
    const std::string ext = file.extension().string();
    if (ext == ".png" || ext == ".npy" || ext == ".svg") continue;
    const std::string text = read_file(file);
    ++scanned;
    for (const std::string& bad : forbidden) {
      EXPECT_EQ(text.find(bad), std::string::npos)
          << fs::relative(file, kRoot).string() << " mentions " << bad;
    }
  }
  EXPECT_GE(scanned, 100);
  EXPECT_TRUE(fs::exists(kRoot / "docs" / "design.md"));
  EXPECT_FALSE(fs::exists(kRoot / "docs" / "dev")) << "internal notes are not documentation";
}

}  // namespace
}  // namespace tapestry::doctest
