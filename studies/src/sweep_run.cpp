// Running a sweep's points and gathering their results (sweep.hpp).
//
// The sweep's folder:
//   .railyard-sweep          marker: this folder is a sweep Railyard wrote (JSON: the sweep file)
//   points/<hash>/           one point: its scenario.yaml, log.txt (what its railyard run printed), out/ (its
//                            outputs) and done (the hash of its input files, written once it finished)
//   results.csv              one row per point, in the sweep's order
// <hash> is FNV-1a over the Railyard version, the base scenario's path and the point's scenario text, so a point run
// once is found again whatever its place in the sweep; `done` holds the hash of the files the point reads (profile,
// traces), so a changed profile runs it again.
#include "railyard/studies/plan.hpp"
#include "railyard/studies/sweep.hpp"

#include "railyard/common/child_process.hpp"
#include "railyard/common/csv.hpp"
#include "railyard/common/error.hpp"
#include "railyard/common/input_file.hpp"
#include "railyard/common/output_file.hpp"
#include "railyard/scenario/scenario.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

namespace railyard::studies {

namespace fs = std::filesystem;

namespace {

constexpr const char* kMarker = ".railyard-sweep";
constexpr const char* kVersion = "railyard 0.1.0";

/// A file the sweep wrote or a point's run wrote, whole (read_input_file: errors name the file).
std::string slurp(const fs::path& p)
{
  return read_input_file(p.string());
}

std::string hex(std::uint64_t h)
{
  return fmt::format("{:016x}", h);
}

/// What a file or folder the point reads holds: its bytes (a folder: its files' names and bytes, in name order).
std::uint64_t hash_input(const fs::path& p, std::map<std::string, std::uint64_t>& cache)
{
  const auto it = cache.find(p.string());
  if (it != cache.end()) return it->second;
  std::uint64_t h = fnv1a(p.string());
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(p, ec))
      if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files)
      h = fnv1a(fmt::format("{:016x}", hash_input(f, cache)), fnv1a(f.string(), h));
  } else {
    std::ifstream in(p, std::ios::binary);
    std::vector<char> buf(1 << 20);
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      h = fnv1a(std::string_view(buf.data(), static_cast<std::size_t>(in.gcount())), h);
    }
  }
  cache[p.string()] = h;
  return h;
}

/// `text` with the sweep's folder `out` taken off the paths in it.
std::string relative_paths(std::string text, const fs::path& out)
{
  const std::string prefix = out.string() + "/";
  for (auto at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at))
    text.erase(at, prefix.size());
  return text;
}

/// The last line of a point's log that says what went wrong ("railyard: error: ..."), else its last line. Paths in it
/// are written relative to the sweep's folder `out` (as the table's folder column is), so a table does not depend on
/// where the sweep was written.
std::string error_line(const fs::path& log, const fs::path& out)
{
  std::ifstream in(log);
  std::string line, last, error;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    last = line;
    if (line.rfind("railyard: error:", 0) == 0 || line.rfind("railyard: internal error:", 0) == 0) error = line;
  }
  return relative_paths(error.empty() ? last : error, out);
}

std::string duration_text(double s)
{
  if (!(s >= 0) || !std::isfinite(s)) return "?";
  const auto t = static_cast<long>(s + 0.5);
  if (t >= 3600) return fmt::format("{}h{:02}m", t / 3600, (t / 60) % 60);
  if (t >= 60) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}s", t);
}

/// A point's row: its result and its folder, relative to the sweep's folder.
struct Row : PointResult {
  std::string folder;
};

struct Task {
  std::size_t index;
  fs::path dir;
  std::string inputs; ///< the hash of its input files, written to `done` when it succeeds
};

/// A point's railyard run, its stdout and stderr into its log.
pid_t launch(const std::vector<std::string>& argv, const fs::path& log)
{
  try {
    return start_program(argv, log.string(), log.string());
  } catch (const std::runtime_error&) {
    throw OutputError(log.string(), "starting a point's process (fork) failed", errno,
                      "run fewer points at once (-j) or free memory");
  }
}

/// `s` quoted for bash.
std::string sh(const std::string& s)
{
  std::string out = "'";
  for (const char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct Captured {
  int exit_code = -1;
  bool not_found = false; ///< the program is not on the PATH
  bool timed_out = false;
  std::string output; ///< stdout and stderr
};

/// Runs `argv` (argv[0] looked up on the PATH), its stdout and stderr captured; killed after `timeout_s` (0: none).
Captured capture(const std::vector<std::string>& argv, double timeout_s)
{
  Captured c;
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("railyard sweep: pipe() failed");
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("railyard sweep: fork() failed");
  if (pid == 0) {
    ::close(fds[0]);
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);
    std::vector<char*> args;
    for (const auto& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    _exit(127);
  }
  ::close(fds[1]);
  const auto start = std::chrono::steady_clock::now();
  char buf[4096];
  while (true) {
    struct pollfd pfd {
      fds[0], POLLIN, 0
    };
    const int ready = ::poll(&pfd, 1, 200);
    if (ready > 0) {
      const ssize_t n = ::read(fds[0], buf, sizeof buf);
      if (n <= 0) break;
      c.output.append(buf, static_cast<std::size_t>(n));
    }
    if (timeout_s > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeout_s) {
      c.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status)) c.exit_code = WEXITSTATUS(status);
  c.not_found = c.exit_code == 127 && c.output.empty();
  return c;
}

std::string first_line(const std::string& text)
{
  const auto nl = text.find('\n');
  return nl == std::string::npos ? text : text.substr(0, nl);
}

/// Slurm's commands answer here: else an InputError, before anything is written or submitted.
void check_slurm()
{
  for (const char* tool : {"sbatch", "sinfo"}) {
    const Captured v = capture({tool, "--version"}, 30);
    if (v.not_found)
      throw InputError({"", 0, "--slurm"}, fmt::format("Slurm's {} is not on the PATH here", tool),
                       "run the sweep where Slurm's commands are (a login node), or add their folder to PATH; nothing "
                       "was submitted");
  }
  const Captured q = capture({"sinfo", "-h", "-o", "%P"}, 60);
  if (q.timed_out || q.exit_code != 0)
    throw InputError({"", 0, "--slurm"},
                     fmt::format("Slurm is not reachable: sinfo {}",
                                 q.timed_out ? "did not answer within 60 s" : "says: " + first_line(q.output)),
                     "check that slurmctld runs and that SLURM_CONF (or /etc/slurm/slurm.conf) names it; nothing was "
                     "submitted");
}

/// The job id sbatch --parsable printed ("123" or "123;cluster").
std::string job_id(const Captured& c, const std::string& what)
{
  std::string id;
  for (const char ch : c.output) {
    if (ch < '0' || ch > '9') break;
    id += ch;
  }
  if (c.exit_code != 0 || id.empty())
    throw InputError({"", 0, "--slurm"}, fmt::format("sbatch refused the {}: {}", what, first_line(c.output)),
                     "check --slurm-partition, --slurm-account and --slurm-time against the cluster's limits");
  return id;
}

/// Writes the array task's and the gather job's scripts and submits them (sweep.hpp SlurmOptions).
void submit_slurm(const SweepSpec& spec, const SweepRunOptions& opt, const fs::path& out,
                  const std::vector<Task>& queue, SweepOutcome& outcome)
{
  const SlurmOptions& so = opt.slurm;
  const std::string railyard = so.railyard.empty() ? opt.railyard : so.railyard;
  const int batch = std::max(1, so.batch);
  const std::size_t tasks = (queue.size() + static_cast<std::size_t>(batch) - 1) / static_cast<std::size_t>(batch);
  // Slurm's MaxArraySize (1001 unless the cluster sets it): the largest task index is one below it.
  std::size_t max_array = 1001;
  const Captured cfg = capture({"scontrol", "show", "config"}, 30);
  if (cfg.exit_code == 0) {
    const auto at = cfg.output.find("MaxArraySize");
    if (at != std::string::npos) {
      const auto eq = cfg.output.find('=', at);
      if (eq != std::string::npos) max_array = std::strtoul(cfg.output.c_str() + eq + 1, nullptr, 10);
    }
  }
  if (tasks > max_array - 1 || max_array == 0)
    throw InputError({"", 0, "--slurm-batch"},
                     fmt::format("{} points in batches of {} make {} array tasks; the cluster's MaxArraySize allows {}",
                                 queue.size(), batch, tasks, max_array == 0 ? 0 : max_array - 1),
                     fmt::format("give --slurm-batch {} or more", (queue.size() + max_array - 2) / (max_array - 1)));
  const fs::path dir = out / "slurm";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw_path_error(dir.string(), "creating the Slurm scripts' folder", ec.value(), "--out");
  write_file_replacing(dir / "tasks.txt", [&](std::ostream& o) {
    for (const Task& t : queue)
      o << t.dir.string() << "\t" << t.inputs << "\n";
  });
  std::string run_args;
  for (const std::string& a : opt.run_args)
    run_args += " " + sh(a);
  write_file_replacing(dir / "array.sh", [&](std::ostream& o) {
    o << "#!/bin/bash\n"
         "# railyard sweep: one array task runs "
      << batch << " point(s) of tasks.txt, each railyard run in its own process.\n"
      << so.setup << (so.setup.empty() ? "" : "\n") << "first=$((SLURM_ARRAY_TASK_ID * " << batch
      << " + 1))\n"
         "sed -n \"${first},$((first + "
      << batch - 1 << "))p\" " << sh((dir / "tasks.txt").string())
      << " | while IFS=$'\\t' read -r dir inputs; do\n"
         "  rm -f \"$dir/done\" \"$dir/exit\"\n"
         "  "
      << sh(railyard) << " run \"$dir/scenario.yaml\" --out \"$dir/out\" --paths-from " << sh(spec.base_file)
      << run_args
      << " >\"$dir/log.txt\" 2>&1\n"
         "  rc=$?\n"
         "  printf '%s\\n' \"$rc\" >\"$dir/exit\"\n"
         "  if [ \"$rc\" -eq 0 ]; then printf '%s\\n' \"$inputs\" >\"$dir/done.tmp\" && mv -f \"$dir/done.tmp\" "
         "\"$dir/done\"; fi\n"
         "done\n";
  });
  write_file_replacing(dir / "gather.sh", [&](std::ostream& o) {
    o << "#!/bin/bash\n"
         "# railyard sweep: the table of the points that finished (after the array job, whatever its outcome).\n"
      << so.setup << (so.setup.empty() ? "" : "\n") << "exec " << sh(railyard) << " sweep "
      << sh(fs::absolute(opt.sweep_file).lexically_normal().string()) << " --out " << sh(out.string()) << " --gather\n";
  });
  std::vector<std::string> common = {"sbatch", "--parsable"};
  if (!so.partition.empty()) common.push_back("--partition=" + so.partition);
  if (!so.account.empty()) common.push_back("--account=" + so.account);
  if (!so.time.empty()) common.push_back("--time=" + so.time);
  std::vector<std::string> array = common;
  array.insert(array.end(), {"--job-name=railyard-" + spec.name, fmt::format("--array=0-{}", tasks - 1),
                             "--output=" + (dir / "task-%a.log").string(), (dir / "array.sh").string()});
  outcome.array_job = job_id(capture(array, 120), "array job");
  std::vector<std::string> gather = common;
  gather.insert(gather.end(),
                {"--job-name=railyard-" + spec.name + "-gather", "--dependency=afterany:" + outcome.array_job,
                 "--output=" + (dir / "gather.log").string()});
  if (so.wait) gather.push_back("--wait");
  gather.push_back((dir / "gather.sh").string());
  const Captured g = capture(gather, 0);
  if (so.wait) {
    // sbatch --wait prints the id, then returns the job's exit code once it ended.
    outcome.gather_job = job_id(Captured{0, false, false, g.output}, "gather job");
    outcome.gather_exit = g.exit_code;
  } else {
    outcome.gather_job = job_id(g, "gather job");
  }
  outcome.ran = queue.size();
}

} // namespace

void claim_study_folder(const fs::path& out, const std::string& sweep_file)
{
  std::error_code ec;
  if (fs::exists(out, ec)) {
    if (!fs::is_directory(out, ec))
      throw InputError({"", 0, "--out"}, fmt::format("'{}' exists and is not a folder", out.string()),
                       "choose another --out folder");
    const bool empty = fs::is_empty(out, ec);
    if (!empty && !fs::exists(out / kMarker, ec))
      throw InputError({"", 0, "--out"},
                       fmt::format("'{}' holds files and is not a sweep's folder (no {})", out.string(), kMarker),
                       "choose another --out folder, or empty this one: a sweep never writes over what it did not "
                       "write");
  } else {
    fs::create_directories(out, ec);
    if (ec) throw_path_error(out.string(), "creating the sweep's folder", ec.value(), "--out");
  }
  write_file_replacing(out / kMarker, [&](std::ostream& o) {
    o << nlohmann::ordered_json{{"railyard_sweep", 1}, {"version", kVersion}, {"sweep_file", sweep_file}}.dump()
      << "\n";
  });
}

SweepOutcome run_sweep(const SweepSpec& spec, const SweepRunOptions& opt)
{
  using Mode = SweepRunOptions::Mode;
  if (opt.mode == Mode::Slurm) check_slurm(); // nothing written or submitted when Slurm does not answer
  const fs::path out = fs::absolute(opt.out).lexically_normal();
  claim_study_folder(out, spec.file);
  {
    std::error_code ec;
    fs::create_directories(out / "points", ec);
    if (ec) throw_path_error((out / "points").string(), "creating the points' folder", ec.value(), "--out");
  }
  const std::vector<SweepPoint> points = expand_sweep(spec);
  SweepOutcome outcome;
  outcome.points = points.size();
  std::vector<Row> rows(points.size());
  std::vector<Task> queue;
  std::map<std::string, std::uint64_t> input_cache;

  const auto read_metrics = [&](std::size_t i, const fs::path& dir) {
    rows[i].status = "ok";
    rows[i].metrics = summary_metrics(slurp(dir / "out" / "summary.json"));
  };

  // Plan: write each point's scenario, check it as railyard run will, and find the ones already done.
  std::string first_invalid;
  for (const SweepPoint& p : points) {
    Row& row = rows[p.index];
    if (!p.invalid.empty()) {
      row.status = "invalid";
      row.error = p.invalid;
      if (first_invalid.empty()) first_invalid = p.invalid;
      ++outcome.invalid;
      continue;
    }
    if (p.index < opt.skip.size() && !opt.skip[p.index].empty()) {
      row.status = "skipped";
      row.error = opt.skip[p.index];
      ++outcome.skipped;
      continue;
    }
    const std::string name = hex(fnv1a(p.yaml, fnv1a(spec.base_file, fnv1a(kVersion))));
    const fs::path dir = out / "points" / name;
    row.folder = "points/" + name;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw_path_error(dir.string(), "creating a point's folder", ec.value(), "--out");
    if (!fs::exists(dir / "scenario.yaml", ec) || slurp(dir / "scenario.yaml") != p.yaml)
      write_file_replacing(dir / "scenario.yaml", [&](std::ostream& o) { o << p.yaml; });
    std::uint64_t inputs = fnv1a(kVersion);
    try {
      const scenario::Scenario sc = scenario::load_scenario((dir / "scenario.yaml").string(), spec.base_file);
      for (const std::string& f : sc.input_files())
        if (fs::path(f) != dir / "scenario.yaml") inputs = fnv1a(hex(hash_input(f, input_cache)), inputs);
    } catch (const InputError& e) {
      row.status = "invalid";
      row.error = relative_paths(e.what(), out);
      if (first_invalid.empty()) first_invalid = e.what();
      ++outcome.invalid;
      continue;
    }
    const std::string inputs_text = hex(inputs);
    if (fs::exists(dir / "done", ec) && slurp(dir / "done") == inputs_text + "\n" &&
        fs::exists(dir / "out" / "summary.json", ec)) {
      read_metrics(p.index, dir);
      ++outcome.reused;
      continue;
    }
    fs::remove(dir / "done", ec); // stale: this point runs again
    if (opt.mode != Mode::Gather) fs::remove(dir / "exit", ec);
    queue.push_back({p.index, dir, inputs_text});
  }
  if (outcome.invalid == points.size() && !points.empty())
    throw InputError({spec.file, 0, ""}, fmt::format("no point of the sweep can run; the first: {}", first_invalid),
                     "fix the sweep's axes or derived keys (the message names the key)");

  if (opt.mode == Mode::Gather) {
    // The points that did not finish: their log says why (the Slurm task wrote its exit code beside it).
    for (const Task& t : queue) {
      Row& row = rows[t.index];
      row.status = "failed";
      std::error_code ec;
      const std::string line = fs::exists(t.dir / "log.txt", ec) ? error_line(t.dir / "log.txt", out) : std::string();
      const std::string code = fs::exists(t.dir / "exit", ec) ? first_line(slurp(t.dir / "exit")) : std::string();
      row.exit_code = code.empty() ? -1 : std::atoi(code.c_str());
      row.error = line.empty() && code.empty() ? "did not run (no log: its task did not start, or was cancelled)"
                  : code.empty()               ? line + " (did not finish)"
                                               : fmt::format("{} (exit code {})", line, code);
      ++outcome.failed;
    }
    queue.clear();
  } else if (opt.mode == Mode::Slurm && !queue.empty()) {
    submit_slurm(spec, opt, out, queue, outcome);
    return outcome; // the gather job writes results.csv
  }

  // Run: up to opt.jobs points at once, each `railyard run` in its own process.
  const bool tty = isatty(STDERR_FILENO) != 0;
  const bool show = opt.progress || tty;
  struct Running {
    Task task;
    std::chrono::steady_clock::time_point start;
  };
  std::map<pid_t, Running> running;
  std::size_t next = 0, finished = 0;
  double run_seconds = 0; // wall time of the points finished, summed
  const auto report = [&] {
    if (!show) return;
    const std::size_t left = queue.size() - finished;
    const double mean = finished > 0 ? run_seconds / static_cast<double>(finished) : -1;
    const double eta = mean < 0 ? -1 : mean * static_cast<double>(left) / std::max(1, opt.jobs);
    const std::string line = fmt::format(
        "sweep {}: {}/{} points done ({} reused), {} running, {} failed, {} invalid{}, ETA {}", spec.name,
        finished + outcome.reused, points.size() - outcome.invalid - outcome.skipped, outcome.reused, running.size(),
        outcome.failed, outcome.invalid, outcome.skipped ? fmt::format(", {} skipped", outcome.skipped) : std::string(),
        left == 0 ? "0s" : duration_text(eta));
    if (tty)
      std::cerr << "\r" << line << "\x1b[K" << std::flush;
    else
      std::cerr << line << "\n";
  };
  report();
  while (next < queue.size() || !running.empty()) {
    while (next < queue.size() && running.size() < static_cast<std::size_t>(std::max(1, opt.jobs))) {
      const Task& t = queue[next++];
      std::vector<std::string> argv = {
          opt.railyard,   "run",         (t.dir / "scenario.yaml").string(), "--out", (t.dir / "out").string(),
          "--paths-from", spec.base_file};
      argv.insert(argv.end(), opt.run_args.begin(), opt.run_args.end());
      running.emplace(launch(argv, t.dir / "log.txt"), Running{t, std::chrono::steady_clock::now()});
    }
    report();
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("railyard sweep: waitpid failed");
    }
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const Task t = it->second.task;
    run_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - it->second.start).count();
    running.erase(it);
    ++finished;
    Row& row = rows[t.index];
    std::error_code ec;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && fs::exists(t.dir / "out" / "summary.json", ec)) {
      read_metrics(t.index, t.dir);
      write_file_replacing(t.dir / "done", [&](std::ostream& o) { o << t.inputs << "\n"; });
      ++outcome.ran;
    } else {
      row.status = "failed";
      row.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      const std::string why = WIFEXITED(status)     ? fmt::format("exit code {}", WEXITSTATUS(status))
                              : WIFSIGNALED(status) ? fmt::format("killed by signal {}", WTERMSIG(status))
                                                    : std::string("did not finish");
      const std::string line = error_line(t.dir / "log.txt", out);
      row.error = line.empty() ? why : fmt::format("{} ({})", line, why);
      if (WIFEXITED(status)) // as a Slurm task leaves it, for a later --gather
        write_file_replacing(t.dir / "exit", [&](std::ostream& o) { o << WEXITSTATUS(status) << "\n"; });
      ++outcome.failed;
    }
  }
  report();
  if (tty) std::cerr << "\n";

  // The table: point, status, the swept and derived keys, then every metric any point reported (in the order they
  // first appear), the error and the point's folder.
  std::vector<std::string> metric_names;
  for (const Row& r : rows)
    for (const auto& [k, v] : r.metrics)
      if (std::find(metric_names.begin(), metric_names.end(), k) == metric_names.end()) metric_names.push_back(k);
  // With parts: the cost of every point's cluster, whether its run finished or not (plan.hpp), after the metrics.
  if (spec.cost)
    for (const SweepPoint& p : points) {
      Row& r = rows[p.index];
      if (r.status == "invalid") continue;
      try {
        for (auto& kv : cost_metrics(*spec.cost, p.yaml, fmt::format("{} point {}", spec.file, p.index))) {
          if (std::find(metric_names.begin(), metric_names.end(), kv.first) == metric_names.end())
            metric_names.push_back(kv.first);
          r.metrics.push_back(std::move(kv));
        }
      } catch (const InputError& e) {
        // The parts do not fit this point's cluster (too few switch ports, ...): the point has no cost, and says why.
        r.error += (r.error.empty() ? "" : "; ") + std::string("cost: ") + e.what();
      }
    }
  const std::vector<std::string> columns = spec.columns();
  for (const SweepPoint& p : points) {
    const Row& r = rows[p.index];
    if (r.status != "ok" && r.status != "skipped") outcome.problems.emplace_back(p.index, r.status, r.error);
    outcome.rows.push_back(r);
  }
  outcome.results = (out / "results.csv").string();
  write_file_replacing(out / "results.csv", [&](std::ostream& o) {
    std::vector<std::string> header = {"point", "status"};
    header.insert(header.end(), columns.begin(), columns.end());
    header.insert(header.end(), metric_names.begin(), metric_names.end());
    header.insert(header.end(), {"error", "folder"});
    CsvWriter csv(o);
    csv.record(header);
    for (const SweepPoint& p : points) {
      const Row& r = rows[p.index];
      std::vector<std::string> cells = {std::to_string(p.index), r.status};
      cells.insert(cells.end(), p.values.begin(), p.values.end());
      for (const std::string& m : metric_names) {
        const auto f = std::find_if(r.metrics.begin(), r.metrics.end(), [&](const auto& kv) { return kv.first == m; });
        cells.push_back(f == r.metrics.end() ? "" : f->second);
      }
      cells.push_back(r.error);
      cells.push_back(r.folder);
      csv.record(cells);
    }
  });
  return outcome;
}

std::vector<std::pair<std::string, std::string>> summary_metrics(const std::string& text)
{
  std::vector<std::pair<std::string, std::string>> m;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return m;
  const auto num = [&](const std::string& column, const nlohmann::json::json_pointer& ptr) {
    if (j.contains(ptr) && j.at(ptr).is_number()) m.emplace_back(column, shortest_number(j.at(ptr).get<double>()));
  };
  using ptr = nlohmann::json::json_pointer;
  // A training step.
  num("step_time_s", ptr("/step_time_s"));
  num("mfu", ptr("/mfu"));
  num("model_tflops_per_gpu", ptr("/model_tflops_per_gpu"));
  num("hardware_tflops_per_gpu", ptr("/hardware_tflops_per_gpu"));
  for (const char* part : {"compute", "exposed_communication", "bubble", "idle"})
    num(fmt::format("{}_fraction", part), ptr(fmt::format("/breakdown_mean_over_ranks/fractions_of_step/{}", part)));
  for (const char* g : {"tp", "pp", "dp", "ep", "cp", "other"})
    num(fmt::format("exposed_{}_s", g), ptr(fmt::format("/breakdown_mean_over_ranks/exposed_communication_s/{}", g)));
  if (j.contains("congestion") && j["congestion"].contains("by_group") && j["congestion"]["by_group"].is_object())
    for (const auto& [g, v] : j["congestion"]["by_group"].items())
      if (v.contains("factor") && v["factor"].is_number())
        m.emplace_back(fmt::format("congestion_factor_{}", g), shortest_number(v["factor"].get<double>()));
  if (j.contains("gpu_memory") && j["gpu_memory"].is_array() && !j["gpu_memory"].empty()) {
    num("peak_gpu_memory_bytes", ptr("/gpu_memory/0/peak_bytes"));
    // railyard run --memory-only: whether it fits, and the peak stage's parts.
    const auto& g = j["gpu_memory"][0];
    if (g.contains("fits") && g["fits"].is_boolean())
      m.emplace_back("memory_fits", g["fits"].get<bool>() ? "yes" : "no");
    num("gpu_memory_capacity_bytes", ptr("/gpu_memory/0/capacity_bytes"));
    if (g.contains("breakdown") && g["breakdown"].is_string())
      m.emplace_back("memory_breakdown", g["breakdown"].get<std::string>());
  }
  // The network under congestion control.
  if (j.contains("network") && j["network"].contains("hottest_links") && j["network"]["hottest_links"].is_array() &&
      !j["network"]["hottest_links"].empty()) {
    const auto& h = j["network"]["hottest_links"][0];
    if (h.contains("name") && h["name"].is_string()) m.emplace_back("hottest_link", h["name"].get<std::string>());
    num("hottest_link_utilisation", ptr("/network/hottest_links/0/utilisation"));
  }
  num("max_queue_bytes", ptr("/network/max_queue_bytes"));
  num("pause_time_s", ptr("/network/pause_time_s"));
  num("ecn_marks", ptr("/network/ecn_marks"));
  num("cnps", ptr("/network/cnps"));
  // Collectives: the run's simulated time and each call's time and bus bandwidth, by its place in the scenario.
  num("simulated_time_s", ptr("/simulated_time_s"));
  if (j.contains("collectives") && j["collectives"].is_array()) {
    std::size_t i = 0;
    for (const auto& c : j["collectives"]) {
      // c<i>: the call's place in summary.json's list (collectives.csv's rows; every iteration its own entry), which
      // stays the same column across points whatever their sizes or labels.
      const auto text = [&](const char* key) {
        return c.contains(key) && c[key].is_string() ? c[key].get<std::string>() : std::string();
      };
      if (c.contains("time_s") && c["time_s"].is_number())
        m.emplace_back(fmt::format("c{}_time_s", i), shortest_number(c["time_s"].get<double>()));
      if (c.contains("busbw_GBps") && c["busbw_GBps"].is_number())
        m.emplace_back(fmt::format("c{}_busbw_GBps", i), shortest_number(c["busbw_GBps"].get<double>()));
      if (!text("algorithm").empty())
        m.emplace_back(fmt::format("c{}_algorithm", i), text("algorithm") + "/" + text("protocol"));
      ++i;
    }
  }
  return m;
}

} // namespace railyard::studies
