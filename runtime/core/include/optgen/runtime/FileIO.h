//===- FileIO.h - Writing files so that a failure loses nothing -*- C++ -*-===//
//
// Every file the runtime writes (checkpoints, case results, reports) is
// written atomically: into a temporary file in the same folder, flushed to
// the disk (fsync), then renamed over the target, and the folder synced. A
// failure at any point (a full disk, a missing folder, a crash) leaves the
// previous file as it was and no temporary behind; a reader never sees a
// half-written file.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_FILEIO_H
#define OPTGEN_RUNTIME_FILEIO_H

#include <cstddef>
#include <string>

namespace optgen::runtime {

/// Replaces the file at `path` by `size` bytes, atomically (see above).
/// Throws Error naming `path` and the cause; the old file, if any, is then
/// untouched.
void writeFileAtomically(const std::string &path, const void *data,
                         size_t size);
inline void writeFileAtomically(const std::string &path,
                                const std::string &text) {
  writeFileAtomically(path, text.data(), text.size());
}

/// Whether `a` and `b` name the same existing file (the same device and
/// inode: through links, `./`, `..`), or the same path when either does
/// not exist yet.
bool sameFile(const std::string &a, const std::string &b);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_FILEIO_H
