// What the tests of the railyard binary share: running it, reading what it wrote, scratch folders.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace railyard::test {

namespace fs = std::filesystem;

struct CliResult {
  int exit_code = -1; ///< -1 when the binary did not exit normally
  std::string out;    ///< stdout
  std::string output; ///< stdout, then stderr
};

/// Runs the railyard binary under test (RAILYARD_CLI) with `args`, a shell-quoted argument string.
inline CliResult run_cli(const std::string& args)
{
  static int calls = 0;
  CliResult r;
  const fs::path err =
      fs::temp_directory_path() / ("railyard_cli_err_" + std::to_string(getpid()) + "_" + std::to_string(++calls));
  const std::string cmd = std::string(RAILYARD_CLI) + " " + args + " 2>" + err.string();
  FILE* p = popen(cmd.c_str(), "r");
  if (!p)
    return r;
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

/// A fresh, empty folder railyard_<name>_<pid> under the system's temporary directory.
inline fs::path temp_dir(const std::string& name)
{
  const fs::path d = fs::temp_directory_path() / ("railyard_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

} // namespace railyard::test
