//===- Cache.h - The folder of what `optgen run` builds ---------*- C++ -*-===//
//
// `optgen run` keeps what it builds in a cache folder: $OPTGEN_CACHE_DIR,
// else $XDG_CACHE_HOME/optgen, else ~/.cache/optgen. Each entry is a
// folder of its own, made by optgen (a runtime built once for every spec, a
// runner of one generated code: Runner.h), which holds a lock file,
// build.lock, held while a process builds or removes the entry, and a
// description, entry.txt, whose first line says what the entry is and
// whose modification time is the entry's last use. `optgen cache list`
// shows the entries, `optgen cache clean` removes them: only entries, only
// inside the cache, never one that is locked.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_DRIVER_CACHE_H
#define OPTGEN_DRIVER_CACHE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <optional>
#include <string>

namespace optgen {

/// The cache folder (absolute; it may not exist yet), or an empty string
/// after reporting that there is none.
std::string cacheDirectory();

/// An entry's folder, locked for as long as this object lives.
class EntryLock {
public:
  /// Creates the folder `dir` if needed and waits until its lock is free
  /// (calling `onWait` first, when another process holds it); null after
  /// reporting an error. A lock on an entry that another process removed
  /// meanwhile is taken again on the folder made anew.
  static std::unique_ptr<EntryLock>
  acquire(llvm::StringRef dir, llvm::function_ref<void()> onWait = {});
  /// The lock of the existing entry `dir` if no one holds it, else null.
  static std::unique_ptr<EntryLock> tryAcquire(llvm::StringRef dir);
  ~EntryLock();
  EntryLock(const EntryLock &) = delete;
  EntryLock &operator=(const EntryLock &) = delete;

private:
  explicit EntryLock(int fd) : fd(fd) {}
  int fd;
};

/// Writes `text` to the file at `path` of an entry (a stamp, a
/// description) atomically; false after reporting an error.
bool writeEntryFile(llvm::StringRef path, llvm::StringRef text);

/// Records that the entry `dir` (locked) is `what` and was used now: its
/// entry.txt. False after reporting an error.
bool describeEntry(llvm::StringRef dir, llvm::StringRef what);

/// `optgen cache list`: one line per entry (size, last use, name, what it
/// is), then the total. Returns the exit status (optgen/runtime/ExitCodes.h).
int listCache(llvm::raw_ostream &os);

/// `optgen cache clean`: removes the entries `names` (entry names, or
/// paths of entries inside the cache), or with `all` every entry, or with
/// `olderThanDays` those not used for that many days. A name or path that
/// is not an entry of the cache is refused before anything is removed; an
/// entry in use (locked) is left, with a warning. Returns the exit status:
/// ExitUsage for a wrong request, ExitFailure when a removal fails.
int cleanCache(llvm::ArrayRef<std::string> names, bool all,
               std::optional<unsigned> olderThanDays, llvm::raw_ostream &os);

} // namespace optgen

#endif // OPTGEN_DRIVER_CACHE_H
