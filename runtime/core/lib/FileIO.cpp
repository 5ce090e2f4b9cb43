//===- FileIO.cpp - Writing files so that a failure loses nothing ---------===//

#include "optgen/runtime/FileIO.h"

#include "optgen/runtime/Error.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace optgen::runtime {

namespace {

[[noreturn]] void fail(const std::string &path, const std::string &problem) {
  throw Error("'" + path + "': " + problem);
}

std::string cause(int error) { return std::strerror(error); }

/// Removes the temporary on every path out of writeFileAtomically that did
/// not rename it.
struct Temporary {
  std::string path;
  int fd = -1;
  ~Temporary() {
    if (fd >= 0)
      ::close(fd);
    if (!path.empty())
      ::unlink(path.c_str());
  }
};

} // namespace

void writeFileAtomically(const std::string &path, const void *data,
                         size_t size) {
  if (path.empty())
    throw Error("cannot write a file with an empty name");
  std::filesystem::path target(path);
  std::filesystem::path folder = target.parent_path();
  if (folder.empty())
    folder = ".";
  std::error_code error;
  if (std::filesystem::is_directory(target, error))
    fail(path, "is a folder, not a file");
  if (!std::filesystem::is_directory(folder, error))
    fail(path, "cannot write: the folder '" + folder.string() +
                   "' does not exist");

  // A name of our own next to the target, so that the rename stays within
  // one file system and is atomic.
  static std::atomic<unsigned> counter{0};
  Temporary temporary;
  for (int attempt = 0; temporary.fd < 0; ++attempt) {
    std::string name = path + ".tmp." + std::to_string(::getpid()) + "." +
                       std::to_string(counter++);
    int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                    0666);
    if (fd >= 0) {
      temporary.path = name;
      temporary.fd = fd;
    } else if (errno != EEXIST || attempt > 100) {
      fail(path, "cannot create a temporary file next to it: " + cause(errno));
    }
  }

  const char *bytes = static_cast<const char *>(data);
  size_t written = 0;
  while (written < size) {
    ssize_t n = ::write(temporary.fd, bytes + written, size - written);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      fail(path, "cannot write: " + cause(n < 0 ? errno : ENOSPC) +
                     " (after " + std::to_string(written) + " of " +
                     std::to_string(size) +
                     " bytes; the previous file, if any, is unchanged)");
    written += static_cast<size_t>(n);
  }
  if (::fsync(temporary.fd) != 0)
    fail(path, "cannot write: " + cause(errno) +
                   " (the previous file, if any, is unchanged)");
  int fd = temporary.fd;
  temporary.fd = -1;
  if (::close(fd) != 0)
    fail(path, "cannot write: " + cause(errno) +
                   " (the previous file, if any, is unchanged)");
  if (::rename(temporary.path.c_str(), path.c_str()) != 0)
    fail(path, "cannot replace: " + cause(errno) +
                   " (the previous file, if any, is unchanged)");
  temporary.path.clear();
  // The rename itself reaches the disk with the folder.
  int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

bool sameFile(const std::string &a, const std::string &b) {
  struct stat sa, sb;
  bool hasA = ::stat(a.c_str(), &sa) == 0, hasB = ::stat(b.c_str(), &sb) == 0;
  if (hasA && hasB)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  std::error_code error;
  std::filesystem::path pa = std::filesystem::weakly_canonical(a, error);
  if (error)
    return a == b;
  std::filesystem::path pb = std::filesystem::weakly_canonical(b, error);
  if (error)
    return a == b;
  return pa == pb;
}

} // namespace optgen::runtime
