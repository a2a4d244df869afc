// calibration/cuda/common.hpp's CSV writer, host code the CUDA programs share, checked without a GPU: what it writes
// is RFC 4180 (quoted fields, CRLF) and reads back through calibration_csv.cpp as the same fields; a write that fails
// ends the program with exit code 4 and the file's name.
#include "common.hpp"

#include "railyard/calibration/calibration_csv.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p)
{
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace

TEST(CudaCsvWriter, FieldsAreQuotedAndReadBackAsWritten)
{
  const std::vector<std::string> tricky{"plain", "a,b", "say \"hi\"", "", "1.5e-06"};
  EXPECT_EQ(railyard::calib::csv_record(tricky), "plain,\"a,b\",\"say \"\"hi\"\"\",,1.5e-06");
  EXPECT_EQ(railyard::calib::csv_split(railyard::calib::csv_record(tricky)), tricky);
  EXPECT_EQ(railyard::calib::csv_split(railyard::calib::csv_record(tricky) + "\r"), tricky);
}

TEST(CudaCsvWriter, WhatItWritesTheCalibrationReaderReads)
{
  const fs::path path = fs::temp_directory_path() / ("railyard_cuda_csv_" + std::to_string(getpid()) + ".csv");
  {
    railyard::calib::CsvWriter w(path.string(), "mem_bench");
    w.meta("gpu_model", "NVIDIA H200");
    w.note("NCCL said:\nline two"); // a line break in a note would start a data line
    w.header("kernel,bytes,time_us");
    w.row({"memcpy, async", "1048576", railyard::calib::g6(10.5)});
    w.row({"say \"triad\"", "2097152", railyard::calib::g6(1.0 / 3.0)});
    w.complete();
  }
  const std::string text = slurp(path);
  EXPECT_EQ(text.find("\n"), text.find("\r\n") + 1) << "records end with CRLF";
  EXPECT_NE(text.find("\"memcpy, async\",1048576,10.5\r\n"), std::string::npos) << text;
  const auto csv = railyard::calibration::parse_calibration_csv(text, path.string());
  EXPECT_EQ(csv.program, "mem_bench");
  EXPECT_EQ(csv.notes, std::vector<std::string>{"NCCL said: line two"});
  ASSERT_EQ(csv.rows.size(), 2u);
  EXPECT_EQ(csv.rows[0].cells, (std::vector<std::string>{"memcpy, async", "1048576", "10.5"}));
  EXPECT_EQ(csv.rows[1].cells, (std::vector<std::string>{"say \"triad\"", "2097152", "0.333333"}));
  fs::remove(path);
}

TEST(CudaCsvWriter, AWriteThatFailsEndsTheProgramWithExitCodeFour)
{
  // /dev/full refuses every write with ENOSPC; the writer writes each line at once, so the first line fails.
  if (!fs::exists("/dev/full"))
    GTEST_SKIP() << "no /dev/full on this system";
  EXPECT_EXIT(railyard::calib::CsvWriter("/dev/full", "mem_bench"), ::testing::ExitedWithCode(4),
              "/dev/full: No space left on device");
}
