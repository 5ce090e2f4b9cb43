//===- FileIO.h - Writing files so that a failure loses nothing -*- C++ -*-===//
//
// Every file optgen writes (checkpoints, case results, reports, generated
// code, the runner cache's stamps) goes through writeFile(), which treats
// what the path names as the trusted tools do (cp, gcc -o, sed -i):
//
// * a regular file, or nothing yet, is replaced atomically: the bytes go
//   into a temporary file in the same folder, flushed to the disk (fsync),
//   renamed over the target, and the folder synced. A failure at any point
//   (a full disk, a missing folder, a crash) leaves the previous file as it
//   was and no temporary behind; a reader never sees a half-written file.
//   The file keeps its permissions.
// * a symbolic link is followed (link by link): what it names is written
//   as above, and the link stays a link.
// * a character device or a fifo (/dev/null, /dev/stdout, a pipe a
//   program reads) is written through, in place: replacing it would put a
//   regular file where the device was (as root, /dev/full or /dev/null of
//   the whole system).
// * anything else (a folder, a block device, a socket) is refused before
//   anything is written.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_FILEIO_H
#define OPTGEN_RUNTIME_FILEIO_H

#include <cstddef>
#include <string>

namespace optgen::runtime {

/// Writes `size` bytes to `path` as the file comment says. Returns the
/// error, naming `path` and the cause, or "" when written; never throws
/// (for callers built without exceptions: the compiler's driver).
std::string writeFile(const std::string &path, const void *data,
                      size_t size);

/// writeFile(), throwing Error with its message.
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
