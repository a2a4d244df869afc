#include "railyard/common/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>

namespace railyard {
namespace {

bool write_all(int fd, const void* data, std::size_t n)
{
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

bool read_all(int fd, void* data, std::size_t n)
{
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = read(fd, p, n);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

} // namespace

ChildResult run_in_child(const std::function<std::vector<double>()>& fn)
{
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("run_in_child: pipe() failed");
  std::fflush(nullptr);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("run_in_child: fork() failed");
  if (pid == 0) {
    close(fds[0]);
    int code = 0;
    try {
      const std::vector<double> out = fn();
      const std::size_t n = out.size();
      if (!write_all(fds[1], &n, sizeof n) || !write_all(fds[1], out.data(), n * sizeof(double))) code = 2;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child process failed: %s\n", e.what());
      code = 1;
    }
    close(fds[1]);
    std::fflush(nullptr);
    _exit(code);
  }
  close(fds[1]);
  ChildResult result;
  std::size_t n = 0;
  if (read_all(fds[0], &n, sizeof n)) {
    result.values.resize(n);
    if (!read_all(fds[0], result.values.data(), n * sizeof(double))) result.values.clear();
  }
  close(fds[0]);
  int status = 0;
  struct rusage usage {};
  wait4(pid, &status, 0, &usage);
  result.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.max_rss_bytes = static_cast<double>(usage.ru_maxrss) * 1024.0; // Linux reports kilobytes
  result.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                       static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("run_in_child: the child process failed (wait status " + std::to_string(status) + ")");
  return result;
}

int start_program(const std::vector<std::string>& argv, const std::string& stdout_path, const std::string& stderr_path)
{
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("start_program: fork() failed");
  if (pid == 0) {
    const int in = ::open("/dev/null", O_RDONLY);
    if (in >= 0) ::dup2(in, 0);
    const int out = ::open(stdout_path.empty() ? "/dev/null" : stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out >= 0) ::dup2(out, 1);
    const int err = stderr_path == stdout_path ? out : ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err >= 0) ::dup2(err, 2);
    std::vector<char*> args;
    for (const auto& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    std::fprintf(stderr, "could not start %s\n", argv[0].c_str());
    _exit(127);
  }
  return pid;
}

ProgramResult run_program(const std::vector<std::string>& argv, const std::string& stderr_path, double timeout_seconds)
{
  ProgramResult r;
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = start_program(argv, "", stderr_path);
  int status = 0;
  struct rusage usage {};
  while (true) {
    if (::wait4(pid, &status, timeout_seconds > 0 ? WNOHANG : 0, &usage) == pid) break;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeout_seconds) {
      r.timed_out = true;
      ::kill(pid, SIGKILL);
      ::wait4(pid, &status, 0, &usage);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.max_rss_bytes = static_cast<double>(usage.ru_maxrss) * 1024.0;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

} // namespace railyard
