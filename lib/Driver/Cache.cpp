//===- Cache.cpp - The folder of what `optgen run` builds -----------------===//

#include "optgen/Driver/Cache.h"
#include "optgen/runtime/ExitCodes.h"
#include "optgen/runtime/FileIO.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Chrono.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/WithColor.h"

#include <chrono>
#include <ctime>
#include <vector>

using namespace llvm;
using namespace optgen;

namespace {

constexpr StringLiteral lockName = "build.lock";
constexpr StringLiteral descriptionName = "entry.txt";
/// An entry being removed is first renamed to this prefix and its name, so
/// that no process finds half of it; an interrupted removal leaves one,
/// which the next clean removes.
constexpr StringLiteral removingPrefix = ".removing-";

std::string joined(StringRef dir, StringRef name) {
  SmallString<256> path(dir);
  sys::path::append(path, name);
  return path.str().str();
}

/// A folder (not a link to one) holding an entry's lock or description.
bool isEntry(StringRef path) {
  sys::fs::file_status status;
  if (sys::fs::status(path, status, /*Follow=*/false) ||
      status.type() != sys::fs::file_type::directory_file)
    return false;
  return sys::fs::exists(joined(path, lockName)) ||
         sys::fs::exists(joined(path, descriptionName));
}

/// The bytes of the files under `dir`, links not followed.
uint64_t folderBytes(StringRef dir) {
  uint64_t bytes = 0;
  std::error_code error;
  for (sys::fs::recursive_directory_iterator it(dir, error, /*follow=*/false),
       end;
       it != end && !error; it.increment(error)) {
    sys::fs::file_status status;
    if (!sys::fs::status(it->path(), status, /*Follow=*/false) &&
        status.type() == sys::fs::file_type::regular_file)
      bytes += status.getSize();
  }
  return bytes;
}

std::string humanBytes(uint64_t bytes) {
  const char *units[] = {"B", "KB", "MB", "GB", "TB"};
  double value = bytes;
  unsigned unit = 0;
  while (value >= 1000 && unit + 1 < std::size(units)) {
    value /= 1000;
    ++unit;
  }
  std::string text;
  raw_string_ostream os(text);
  if (unit == 0)
    os << bytes << " B";
  else
    os << format("%.1f %s", value, units[unit]);
  return text;
}

struct Entry {
  std::string name;
  std::string path;
  std::string what;
  sys::TimePoint<> lastUsed;
};

Entry readEntry(StringRef cache, StringRef name) {
  Entry entry{name.str(), joined(cache, name), "", {}};
  std::string description = joined(entry.path, descriptionName);
  sys::fs::file_status status;
  if (ErrorOr<std::unique_ptr<MemoryBuffer>> text =
          MemoryBuffer::getFile(description)) {
    entry.what = (*text)->getBuffer().split('\n').first.str();
    if (!sys::fs::status(description, status))
      entry.lastUsed = status.getLastModificationTime();
  } else {
    entry.what = "an entry of an earlier optgen";
    if (!sys::fs::status(entry.path, status))
      entry.lastUsed = status.getLastModificationTime();
  }
  return entry;
}

/// The cache's entries, in name order.
std::vector<Entry> readEntries(StringRef cache) {
  std::vector<Entry> entries;
  std::error_code error;
  for (sys::fs::directory_iterator it(cache, error, /*follow=*/false), end;
       it != end && !error; it.increment(error)) {
    StringRef name = sys::path::filename(it->path());
    if (!name.starts_with(removingPrefix) && isEntry(it->path()))
      entries.push_back(readEntry(cache, name));
  }
  llvm::sort(entries,
             [](const Entry &a, const Entry &b) { return a.name < b.name; });
  return entries;
}

std::string localTime(sys::TimePoint<> time) {
  std::time_t seconds = sys::toTimeT(time);
  std::tm parts{};
  localtime_r(&seconds, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", &parts);
  return text;
}

/// Removes the leftovers of removals that were interrupted.
void removeLeftovers(StringRef cache) {
  std::error_code error;
  std::vector<std::string> leftovers;
  for (sys::fs::directory_iterator it(cache, error, /*follow=*/false), end;
       it != end && !error; it.increment(error))
    if (sys::path::filename(it->path()).starts_with(removingPrefix))
      leftovers.push_back(it->path());
  for (const std::string &path : leftovers)
    sys::fs::remove_directories(path, /*IgnoreErrors=*/true);
}

} // namespace

std::string optgen::cacheDirectory() {
  SmallString<256> dir;
  if (std::optional<std::string> chosen =
          sys::Process::GetEnv("OPTGEN_CACHE_DIR");
      chosen && !chosen->empty()) {
    dir = *chosen;
  } else if (sys::path::cache_directory(dir)) {
    sys::path::append(dir, "optgen");
  } else {
    WithColor::error(errs(), "optgen")
        << "no folder for optgen's cache: neither XDG_CACHE_HOME nor a home "
           "folder is set; set OPTGEN_CACHE_DIR\n";
    return "";
  }
  if (std::error_code error = sys::fs::make_absolute(dir)) {
    WithColor::error(errs(), "optgen")
        << "cannot make the cache folder '" << dir
        << "' absolute: " << error.message() << "\n";
    return "";
  }
  sys::path::remove_dots(dir, /*remove_dot_dot=*/true);
  return dir.str().str();
}

std::unique_ptr<EntryLock> EntryLock::acquire(StringRef dir,
                                              function_ref<void()> onWait) {
  std::string path = joined(dir, lockName);
  // A clean may remove the entry while this process waits for its lock:
  // the lock then belongs to a file no longer there, and is taken again.
  for (;;) {
    if (std::error_code error = sys::fs::create_directories(dir)) {
      WithColor::error(errs(), "optgen")
          << "cannot create '" << dir << "': " << error.message() << "\n";
      return nullptr;
    }
    int fd = -1;
    if (std::error_code error = sys::fs::openFileForWrite(
            path, fd, sys::fs::CD_OpenAlways)) {
      WithColor::error(errs(), "optgen")
          << "cannot open '" << path << "': " << error.message() << "\n";
      return nullptr;
    }
    std::unique_ptr<EntryLock> lock(new EntryLock(fd));
    if (onWait && sys::fs::tryLockFile(fd)) {
      onWait();
      onWait = {};
    }
    if (std::error_code error = sys::fs::lockFile(fd)) {
      WithColor::error(errs(), "optgen")
          << "cannot lock '" << path << "': " << error.message() << "\n";
      return nullptr;
    }
    sys::fs::file_status locked, there;
    if (!sys::fs::status(fd, locked) && !sys::fs::status(path, there) &&
        sys::fs::equivalent(locked, there))
      return lock;
  }
}

std::unique_ptr<EntryLock> EntryLock::tryAcquire(StringRef dir) {
  int fd = -1;
  if (sys::fs::openFileForWrite(joined(dir, lockName), fd,
                                sys::fs::CD_OpenAlways))
    return nullptr;
  std::unique_ptr<EntryLock> lock(new EntryLock(fd));
  if (sys::fs::tryLockFile(fd))
    return nullptr;
  return lock;
}

EntryLock::~EntryLock() {
  sys::fs::unlockFile(fd);
  sys::Process::SafelyCloseFileDescriptor(fd);
}

bool optgen::describeEntry(StringRef dir, StringRef what) {
  return writeEntryFile(joined(dir, descriptionName), (what + "\n").str());
}

bool optgen::writeEntryFile(StringRef path, StringRef text) {
  std::string error = runtime::writeFile(path.str(), text.data(), text.size());
  if (!error.empty())
    WithColor::error(errs(), "optgen") << error << "\n";
  return error.empty();
}

int optgen::listCache(raw_ostream &os) {
  std::string cache = cacheDirectory();
  if (cache.empty())
    return runtime::ExitFailure;
  os << "optgen's cache: " << cache << "\n";
  std::vector<Entry> entries =
      sys::fs::is_directory(cache) ? readEntries(cache) : std::vector<Entry>();
  uint64_t total = 0;
  if (!entries.empty())
    os << format("%10s  %-16s  %s\n", static_cast<const char *>("SIZE"),
                 static_cast<const char *>("LAST USED"),
                 static_cast<const char *>("ENTRY"));
  for (const Entry &entry : entries) {
    uint64_t bytes = folderBytes(entry.path);
    total += bytes;
    os << format("%10s  %-16s  ", humanBytes(bytes).c_str(),
                 localTime(entry.lastUsed).c_str())
       << entry.name << ": " << entry.what << "\n";
  }
  os << entries.size() << (entries.size() == 1 ? " entry, " : " entries, ")
     << humanBytes(total) << "\n";
  return runtime::ExitSuccess;
}

int optgen::cleanCache(ArrayRef<std::string> names, bool all,
                       std::optional<unsigned> olderThanDays,
                       raw_ostream &os) {
  if ((!names.empty()) + all + olderThanDays.has_value() != 1) {
    WithColor::error(errs(), "optgen")
        << "optgen cache clean takes entries (their names, as 'optgen cache "
           "list' shows them), --all or --older-than DAYS: one of them\n";
    return runtime::ExitUsage;
  }
  std::string cache = cacheDirectory();
  if (cache.empty())
    return runtime::ExitFailure;
  SmallString<256> realCache;
  if (!sys::fs::is_directory(cache) || sys::fs::real_path(cache, realCache)) {
    if (!names.empty()) {
      WithColor::error(errs(), "optgen")
          << "optgen's cache (" << cache << ") does not exist: it has no entry '"
          << names.front() << "'\n";
      return runtime::ExitUsage;
    }
    os << "optgen's cache (" << cache << ") is empty\n";
    return runtime::ExitSuccess;
  }
  removeLeftovers(realCache);

  // What to remove, all of it checked before anything is.
  std::vector<Entry> chosen;
  for (const std::string &name : names) {
    SmallString<256> path(name);
    if (!StringRef(name).contains('/'))
      path = joined(realCache, name);
    SmallString<256> real;
    bool inside = !sys::fs::real_path(path, real) &&
                  sys::path::parent_path(real) == realCache.str() &&
                  isEntry(real);
    if (!inside) {
      WithColor::error(errs(), "optgen")
          << "'" << name << "' is not an entry of optgen's cache (" << cache
          << "; 'optgen cache list' shows them): nothing was removed\n";
      return runtime::ExitUsage;
    }
    chosen.push_back(readEntry(realCache, sys::path::filename(real)));
  }
  if (all || olderThanDays) {
    auto oldest = std::chrono::system_clock::now() -
                  std::chrono::hours(24) * olderThanDays.value_or(0);
    for (Entry &entry : readEntries(realCache))
      if (all || entry.lastUsed < oldest)
        chosen.push_back(std::move(entry));
  }

  uint64_t total = 0;
  unsigned removed = 0;
  for (const Entry &entry : chosen) {
    uint64_t bytes = folderBytes(entry.path);
    std::string away =
        joined(realCache, (Twine(removingPrefix) + entry.name + "-" +
                           Twine(sys::Process::getProcessId()))
                              .str());
    {
      std::unique_ptr<EntryLock> lock = EntryLock::tryAcquire(entry.path);
      if (!lock) {
        WithColor::warning(errs(), "optgen")
            << "'" << entry.name
            << "' is in use (a build holds its lock): it is left as it is\n";
        continue;
      }
      if (std::error_code error = sys::fs::rename(entry.path, away)) {
        WithColor::error(errs(), "optgen")
            << "cannot remove '" << entry.path << "': " << error.message()
            << "\n";
        return runtime::ExitFailure;
      }
    }
    if (std::error_code error = sys::fs::remove_directories(away)) {
      WithColor::error(errs(), "optgen")
          << "cannot remove '" << away << "' (" << entry.name
          << ", renamed so): " << error.message() << "\n";
      return runtime::ExitFailure;
    }
    os << "removed " << entry.name << " (" << humanBytes(bytes) << ")\n";
    total += bytes;
    ++removed;
  }
  os << "removed " << removed << (removed == 1 ? " entry, " : " entries, ")
     << humanBytes(total) << "\n";
  return runtime::ExitSuccess;
}
