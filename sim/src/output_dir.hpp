// An output folder that appears complete or not at all: files go to "<dir>.partial", renamed to `dir` by commit().
// A run that throws half-way leaves no folder named `dir` (a stale "<dir>.partial" is cleared by the next run).
#pragma once

#include <filesystem>
#include <string>

namespace railyard::sim {

class PartialDir {
public:
  explicit PartialDir(const std::string& dir) : final_(dir), partial_(final_.string() + ".partial")
  {
    std::filesystem::remove_all(partial_);
    std::filesystem::create_directories(partial_);
  }
  /// Where to write meanwhile.
  [[nodiscard]] const std::filesystem::path& path() const { return partial_; }
  /// Replaces any previous `dir` by what was written.
  void commit()
  {
    std::filesystem::remove_all(final_);
    std::filesystem::rename(partial_, final_);
  }

private:
  std::filesystem::path final_, partial_;
};

} // namespace railyard::sim
