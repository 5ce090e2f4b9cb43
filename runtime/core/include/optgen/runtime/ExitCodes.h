//===- ExitCodes.h - What optgen's commands exit with -----------*- C++ -*-===//
//
// The exit statuses of `optgen` and of the runners it builds, one set for
// both, since `optgen run` passes its runner's status on. A script can tell
// a mistake in its own command line from a spec that does not compile, a
// run that failed and a run whose results are outside the tolerance it
// asked for. README.md ("Exit status") lists them for users.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_EXITCODES_H
#define OPTGEN_RUNTIME_EXITCODES_H

namespace optgen::runtime {

enum ExitCode : int {
  /// Done as asked.
  ExitSuccess = 0,
  /// The work failed: a file that cannot be read or written, a case that
  /// does not fit the optimizer, a build of generated code that failed, an
  /// error inside a step.
  ExitFailure = 1,
  /// The command line is wrong: an unknown command or option, a missing or
  /// malformed value, options that do not go together.
  ExitUsage = 2,
  /// The spec (or a -D value, a shapes file, optgen IR) is wrong: the
  /// diagnostics say where.
  ExitSpecError = 3,
  /// `optgen run --tolerance X`: the run completed, but some parameter's
  /// error against the case's expect/ tensors is above X.
  ExitToleranceExceeded = 4,
  /// A CUDA runner found no GPU (CTest's "skipped").
  ExitNoDevice = 77,
};

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_EXITCODES_H
