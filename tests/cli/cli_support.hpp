// What the tests of the railyard binary share: running it, reading what it wrote, scratch folders.
#pragma once

#include "railyard/common/csv.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace railyard::test {

namespace fs = std::filesystem;

struct CliResult {
  int exit_code = -1; ///< -1 when the binary did not exit normally
  std::string out;    ///< stdout
  std::string output; ///< stdout, then stderr
};

/// The railyard binary under test: RAILYARD_CLI, or the one the environment variable RAILYARD_CLI_UNDER_TEST names
/// (to run these tests against another build, e.g. the code before a fix, and see them fail there).
inline std::string cli_binary()
{
  const char* other = std::getenv("RAILYARD_CLI_UNDER_TEST");
  return other != nullptr && *other != '\0' ? other : RAILYARD_CLI;
}

/// `s` quoted for the shell.
inline std::string shell_quote(const std::string& s)
{
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// Runs the railyard binary under test with `args`, a shell-quoted argument string; `env` ("NAME=value ...") is set
/// for it and `cwd`, when given, is its working directory.
inline CliResult run_cli(const std::string& args, const std::string& env = "", const std::string& cwd = "")
{
  static int calls = 0;
  CliResult r;
  const fs::path err =
      fs::temp_directory_path() / ("railyard_cli_err_" + std::to_string(getpid()) + "_" + std::to_string(++calls));
  const std::string cmd = (cwd.empty() ? "" : "cd " + shell_quote(cwd) + " && ") +
                          (env.empty() ? "" : "env " + env + " ") + shell_quote(cli_binary()) + " " + args + " 2>" +
                          err.string();
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), p))
    r.out += buf.data();
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream e(err);
  r.output = r.out + std::string(std::istreambuf_iterator<char>(e), {});
  fs::remove(err);
  return r;
}

inline std::string read_file(const fs::path& p)
{
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The records of a CSV file as maps from its header's names to the fields (railyard's own CSV outputs).
inline std::vector<std::map<std::string, std::string>> csv_rows(const fs::path& p)
{
  const auto records = railyard::parse_csv(read_file(p), p.string());
  std::vector<std::map<std::string, std::string>> out;
  for (std::size_t i = 1; i < records.size(); ++i) {
    std::map<std::string, std::string> row;
    for (std::size_t c = 0; c < records[0].fields.size() && c < records[i].fields.size(); ++c)
      row[records[0].fields[c]] = records[i].fields[c];
    out.push_back(row);
  }
  return out;
}

/// A fresh, empty folder railyard_<name>_<pid> under the system's temporary directory.
inline fs::path temp_dir(const std::string& name)
{
  const fs::path d = fs::temp_directory_path() / ("railyard_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

/// A test with a fresh folder of its own, <suite>_<test> (temp_dir), removed afterwards; write() puts a file in it.
class TempDirTest : public ::testing::Test {
protected:
  void SetUp() override
  {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = temp_dir(std::string(info->test_suite_name()) + "_" + info->name());
  }
  void TearDown() override { fs::remove_all(dir_); }
  /// Writes `text` to dir_/name; returns the path.
  std::string write(const std::string& name, const std::string& text)
  {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  fs::path dir_;
};

} // namespace railyard::test
