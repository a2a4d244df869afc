// Checked writes (output_file.hpp) and output folders (output_dir.hpp) in-process. The refusals and injected failures
// through the binary are in tests/cli/test_cli_outputs.cpp.
#include "railyard/common/error.hpp"
#include "railyard/common/output_dir.hpp"
#include "railyard/common/output_file.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace fs = std::filesystem;
using namespace railyard;

namespace {

std::string slurp(const fs::path& p)
{
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct TempDir {
  fs::path path =
      fs::temp_directory_path() /
      ("railyard_output_file_" + std::string(testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
       std::to_string(getpid()));
  TempDir()
  {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

} // namespace

TEST(OutputFile, WritesEveryByteIncludingLargeBlocks)
{
  TempDir d;
  // Larger than the 64 KiB buffer, so both the buffered and the direct write paths run.
  const std::string big(200 * 1024 + 7, 'x');
  OutputFile f(d.path / "a.txt");
  f << "head\n" << big << "tail";
  f.close();
  EXPECT_EQ(slurp(d.path / "a.txt"), "head\n" + big + "tail");
}

TEST(OutputFile, AFullDeviceIsAnOutputErrorAtCloseNamingTheFile)
{
  // /dev/full refuses every write with ENOSPC; the few bytes below sit in the buffer until close() flushes them.
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  OutputFile f("/dev/full");
  f << "a summary that will not fit";
  try {
    f.close();
    FAIL() << "close() must report the failed flush";
  } catch (const OutputError& e) {
    EXPECT_EQ(e.path(), "/dev/full");
    EXPECT_EQ(e.os_errno(), ENOSPC);
    EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Fix:"), std::string::npos) << e.what();
  }
}

TEST(OutputFile, APathThatCannotBeCreatedIsAnInputError)
{
  TempDir d;
  EXPECT_THROW(OutputFile(d.path / "missing" / "a.txt"), InputError);
  EXPECT_THROW(OutputFile("/sys/railyard_cannot_write_here"), InputError);
}

TEST(ReplacingFile, TheTargetIsTheOldFileOrTheCompleteNewOne)
{
  TempDir d;
  const fs::path target = d.path / "p.yaml";
  std::ofstream(target) << "old";
  {
    ReplacingFile f(target);
    f.stream() << "half of the new";
    // No commit: an exception would leave here.
  }
  EXPECT_EQ(slurp(target), "old");
  write_file_replacing(target, [](std::ostream& out) { out << "new"; });
  EXPECT_EQ(slurp(target), "new");
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(d.path))
    ++files;
  EXPECT_EQ(files, 1) << "no temporary file is left beside the target";
}

TEST(OutputDir, CommitSwapsTheNewFolderInAndKeepsNothingOfTheOld)
{
  TempDir d;
  const fs::path out = d.path / "out";
  {
    OutputDir folder(out.string(), {false, "--out", "run", "s.yaml", {}});
    EXPECT_EQ(folder.staging(), fs::path(out.string() + ".partial"));
    EXPECT_TRUE(fs::exists(folder.staging() / OutputDir::kMarker)) << "the marker is the first file";
    folder.write("a.csv", [](std::ostream& o) { o << "1"; });
    EXPECT_FALSE(fs::exists(out)) << "nothing named DIR before commit";
    folder.commit();
  }
  EXPECT_EQ(slurp(out / "a.csv"), "1");
  {
    OutputDir folder(out.string(), {false, "--out", "run", "s.yaml", {}});
    folder.write("b.csv", [](std::ostream& o) { o << "2"; });
    folder.commit();
  }
  EXPECT_FALSE(fs::exists(out / "a.csv"));
  EXPECT_EQ(slurp(out / "b.csv"), "2");
  EXPECT_FALSE(fs::exists(out.string() + ".partial"));
  EXPECT_FALSE(fs::exists(out.string() + ".replaced"));
}

TEST(OutputDir, WithoutCommitTheStagingFolderGoesAndTheEarlierOutputStays)
{
  TempDir d;
  const fs::path out = d.path / "out";
  {
    OutputDir folder(out.string(), {});
    folder.write("a.csv", [](std::ostream& o) { o << "earlier"; });
    folder.commit();
  }
  try {
    OutputDir folder(out.string(), {});
    folder.write("a.csv", [](std::ostream& o) { o << "new"; });
    throw std::runtime_error("the run fails before commit");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(slurp(out / "a.csv"), "earlier");
  EXPECT_FALSE(fs::exists(out.string() + ".partial"));
}

TEST(OutputDir, RefusesAFolderItDidNotWriteUnlessForced)
{
  TempDir d;
  const fs::path out = d.path / "mine";
  fs::create_directories(out);
  std::ofstream(out / "thesis.tex") << "years of work";
  EXPECT_THROW(OutputDir(out.string(), {}), InputError);
  EXPECT_EQ(slurp(out / "thesis.tex"), "years of work");
  EXPECT_FALSE(fs::exists(out.string() + ".partial"));
  OutputDirOptions force;
  force.force = true;
  OutputDir folder(out.string(), force);
  folder.commit();
  EXPECT_FALSE(fs::exists(out / "thesis.tex"));
}

TEST(OutputDir, RefusesAFolderHoldingAnInputEvenWhenForced)
{
  TempDir d;
  fs::create_directories(d.path / "in");
  std::ofstream(d.path / "in" / "trace.json") << "{}";
  OutputDirOptions o;
  o.force = true;
  o.inputs = {(d.path / "in" / "trace.json").string()};
  EXPECT_THROW(OutputDir((d.path / "in").string(), o), InputError);
  EXPECT_THROW(OutputDir(d.path.string(), o), InputError);
  EXPECT_THROW(OutputDir((d.path / "in" / "..").string(), o), InputError);
  EXPECT_TRUE(fs::exists(d.path / "in" / "trace.json"));
}
