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

std::string cause(int error) { return std::strerror(error); }

constexpr const char *kUnchanged = " (the previous file, if any, is unchanged)";

/// Removes the temporary on every path out of replaceAtomically that did
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

/// Writes all of `size` bytes to `fd`; the error, or "".
std::string writeAll(int fd, const char *bytes, size_t size) {
  size_t written = 0;
  while (written < size) {
    ssize_t n = ::write(fd, bytes + written, size - written);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return "cannot write: " + cause(n < 0 ? errno : ENOSPC) + " (after " +
             std::to_string(written) + " of " + std::to_string(size) +
             " bytes)";
    written += static_cast<size_t>(n);
  }
  return "";
}

/// The path that `path` names once every symbolic link on it is followed
/// (its folders' links are the file system's business), or the error.
std::string followLinks(std::string path, std::string &error) {
  // As the kernel does: a chain of more than 40 links is a loop.
  for (int hops = 0; hops <= 40; ++hops) {
    struct stat link;
    if (::lstat(path.c_str(), &link) != 0 || !S_ISLNK(link.st_mode))
      return path;
    std::error_code code;
    std::filesystem::path target = std::filesystem::read_symlink(path, code);
    if (code) {
      error = "cannot read the link: " + code.message();
      return path;
    }
    path = target.is_absolute()
               ? target.string()
               : (std::filesystem::path(path).parent_path() / target).string();
  }
  error = "cannot follow the link: " + cause(ELOOP);
  return path;
}

/// Replaces the regular file (or nothing) at `target` by `size` bytes
/// through a temporary next to it; `mode` is the file's, or -1 for a new
/// one. The error, or "".
std::string replaceAtomically(const std::string &target, const char *bytes,
                              size_t size, int mode) {
  std::filesystem::path folder = std::filesystem::path(target).parent_path();
  if (folder.empty())
    folder = ".";
  std::error_code code;
  if (!std::filesystem::is_directory(folder, code))
    return "cannot write: the folder '" + folder.string() +
           "' does not exist";

  // A name of our own next to the target, so that the rename stays within
  // one file system and is atomic.
  static std::atomic<unsigned> counter{0};
  Temporary temporary;
  for (int attempt = 0; temporary.fd < 0; ++attempt) {
    std::string name = target + ".tmp." + std::to_string(::getpid()) + "." +
                       std::to_string(counter++);
    int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                    0666);
    if (fd >= 0) {
      temporary.path = name;
      temporary.fd = fd;
    } else if (errno != EEXIST || attempt > 100) {
      return "cannot create a temporary file next to it: " + cause(errno);
    }
  }
  if (mode >= 0 && ::fchmod(temporary.fd, static_cast<mode_t>(mode)) != 0)
    return "cannot give the new file the old one's permissions: " +
           cause(errno) + kUnchanged;
  std::string error = writeAll(temporary.fd, bytes, size);
  if (!error.empty())
    return error + kUnchanged;
  if (::fsync(temporary.fd) != 0)
    return "cannot write: " + cause(errno) + kUnchanged;
  int fd = temporary.fd;
  temporary.fd = -1;
  if (::close(fd) != 0)
    return "cannot write: " + cause(errno) + kUnchanged;
  if (::rename(temporary.path.c_str(), target.c_str()) != 0)
    return "cannot replace: " + cause(errno) + kUnchanged;
  temporary.path.clear();
  // The rename itself reaches the disk with the folder.
  int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return "";
}

/// Writes into the device or fifo at `target` as it is (no file is
/// created, none replaced). The error, or "".
std::string writeThrough(const std::string &target, const char *bytes,
                         size_t size) {
  int fd = ::open(target.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return "cannot open it for writing: " + cause(errno);
  std::string error = writeAll(fd, bytes, size);
  if (::close(fd) != 0 && error.empty())
    error = "cannot write: " + cause(errno);
  return error;
}

} // namespace

std::string writeFile(const std::string &path, const void *data,
                      size_t size) {
  if (path.empty())
    return "cannot write a file with an empty name";
  auto named = [&](const std::string &problem) {
    return "'" + path + "': " + problem;
  };
  std::string error;
  std::string target = followLinks(path, error);
  if (!error.empty())
    return named(error);
  // Through a link, messages say where it led.
  auto at = [&](const std::string &problem) {
    return named(target == path ? problem
                                : "(a link to '" + target + "') " + problem);
  };
  const char *bytes = static_cast<const char *>(data);
  struct stat status;
  if (::stat(target.c_str(), &status) != 0) {
    if (errno != ENOENT)
      return at("cannot write: " + cause(errno));
    error = replaceAtomically(target, bytes, size, -1);
  } else if (S_ISREG(status.st_mode)) {
    error = replaceAtomically(target, bytes, size,
                              static_cast<int>(status.st_mode & 07777));
  } else if (S_ISCHR(status.st_mode) || S_ISFIFO(status.st_mode)) {
    error = writeThrough(target, bytes, size);
  } else {
    return at(std::string("is ") +
              (S_ISDIR(status.st_mode)   ? "a folder"
               : S_ISBLK(status.st_mode) ? "a block device"
               : S_ISSOCK(status.st_mode) ? "a socket"
                                          : "not a file") +
              ", not a file: optgen replaces regular files and writes "
              "through character devices and fifos, and leaves anything "
              "else as it is");
  }
  return error.empty() ? "" : at(error);
}

void writeFileAtomically(const std::string &path, const void *data,
                         size_t size) {
  std::string error = writeFile(path, data, size);
  if (!error.empty())
    throw Error(error);
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
