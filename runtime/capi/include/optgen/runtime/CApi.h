/*===- CApi.h - A C ABI over generated optimizers -----------------*- C -*-===//
//
// A stable C boundary around a generated optimizer (OptimizerFront.h), for
// languages that load it from a shared library (the Python package,
// python/, through ctypes): an opaque handle, functions that take names,
// data pointers, dtypes and shapes, and errors returned as status codes with
// a message (optgen_last_error()), never as exceptions. No C++ type and no
// framework's ABI crosses it: a program hands over the memory of its
// tensors (host or device pointers) and, for a distributed step, a table of
// collectives (optgen_collectives) that its own communication library
// implements.
//
// A generated optimizer's source defines one factory, `optgen_new_NAME`
// (NAME: the optimizer's name as the generated class spells it), which
// returns a new optimizer for optgen_optimizer_create(); a library holding
// the generated code, the runtime and this component exports both.
//
// Every function returning int returns OPTGEN_OK (0) or OPTGEN_ERROR; then
// optgen_last_error() says why, naming the parameter, group or file at
// fault. Strings a function returns stay valid until the next call with
// the same handle.
//
// Handles are checked: one destroyed already (a second destroy, a use
// after destroy), one of the other kind or one optgen never made is an
// error (for the destroy functions, which return nothing, the thread's
// last error), not a crash. A tensor with elements needs memory: null data
// is an error.
//
//===----------------------------------------------------------------------===*/

#ifndef OPTGEN_RUNTIME_CAPI_H
#define OPTGEN_RUNTIME_CAPI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Changes whenever a function or struct below changes. */
#define OPTGEN_CAPI_VERSION 2

enum { OPTGEN_OK = 0, OPTGEN_ERROR = 1 };

/* The dtypes of the runtime (Tensor.h's DType, in its order). */
enum { OPTGEN_F32 = 0, OPTGEN_BF16 = 1, OPTGEN_F16 = 2, OPTGEN_F64 = 3,
       OPTGEN_I64 = 4 };

/* Where a tensor's memory lives (Tensor.h's Device). */
enum { OPTGEN_HOST = 0, OPTGEN_CUDA = 1 };

/* A dense, row-major tensor somebody else owns. */
typedef struct optgen_tensor {
  void *data;
  int32_t dtype;
  int32_t device;
  int32_t ndim;
  const int64_t *shape; /* ndim extents */
} optgen_tensor;

/* The collectives of a distributed step, implemented by the caller (the
 * Python package's: torch.distributed). Each launch returns at once or when
 * done and gives a request that wait() completes (after which the output
 * may be read and the input changed) and releases; every rank launches the
 * same collectives in the same order, with the same counts (one per rank).
 * The means are those of Communicator.h: sums divided once by the number
 * of ranks. dtype is OPTGEN_F32 or OPTGEN_BF16. A function that fails
 * returns nonzero, and last_error() says why. abort() (may be null) is
 * called before the process ends every rank after an error inside a step
 * that the other ranks cannot learn of. */
typedef struct optgen_collectives {
  void *context;
  int32_t rank, size;
  int (*all_reduce_mean)(void *context, void *data, int64_t count,
                         int32_t dtype, void **request);
  /* Rank r receives in recv the mean of the ranks' send[offset_r,
   * offset_r + counts[r]). */
  int (*reduce_scatter_mean)(void *context, const void *send, void *recv,
                             const int64_t *counts, int32_t dtype,
                             void **request);
  /* recv becomes every rank's send[0, counts[rank]), in rank order. */
  int (*all_gather)(void *context, const void *send, void *recv,
                    const int64_t *counts, int32_t dtype, void **request);
  int (*wait)(void *context, void *request);
  const char *(*last_error)(void *context);
  void (*abort)(void *context, int32_t code);
} optgen_collectives;

typedef struct optgen_optimizer optgen_optimizer;
/* An optimizer state in memory: a checkpoint's metadata and tensors. */
typedef struct optgen_checkpoint optgen_checkpoint;
/* The generated factory: a new optimizer of the generated class. */
typedef void *(*optgen_factory)(void);

int32_t optgen_capi_version(void);
/* Why the last call on this thread failed ("" when none did). */
const char *optgen_last_error(void);

int optgen_optimizer_create(optgen_factory factory, optgen_optimizer **out);
void optgen_optimizer_destroy(optgen_optimizer *optimizer);

/* The spec's tables as JSON: {"name", "distribution" ("zero2" or "none"),
 * "rules": [{"name", "rank", "elementwise", "states": [...], "hypers":
 * [{"name", "size", "int", "default": [...] or null}]}], "groups":
 * [{"name", "rule", "patterns": [...], "where": bool, "settings": {name:
 * [...]}}]}. */
int optgen_spec_json(optgen_optimizer *optimizer, const char **json);

/* Registration, before optgen_finalize(). group NULL or "": the spec's
 * groups bind the parameter by name and shape. */
int optgen_add_group(optgen_optimizer *optimizer, const char *name,
                     const char *rule);
int optgen_add_parameter(optgen_optimizer *optimizer, const char *name,
                         const optgen_tensor *param, const optgen_tensor *grad,
                         const char *group);
/* The ranks to share the step with (before optgen_finalize()); the table is
 * copied, its context must outlive the optimizer. */
int optgen_set_collectives(optgen_optimizer *optimizer,
                           const optgen_collectives *collectives);
/* Steps with a NaN or an infinity in any gradient change nothing and are
 * counted (before optgen_finalize()). */
int optgen_skip_nonfinite(optgen_optimizer *optimizer);
int optgen_finalize(optgen_optimizer *optimizer);

/* Hyperparameters: count values (a tuple's elements, one otherwise). */
int optgen_set_hyper(optgen_optimizer *optimizer, const char *group,
                     const char *name, const double *values, int64_t count);
/* OPTGEN_ERROR, saying why, for values optgen_set_hyper() would refuse;
 * changes nothing (a caller checks a whole set before it applies any). */
int optgen_check_hyper(optgen_optimizer *optimizer, const char *group,
                       const char *name, const double *values, int64_t count);
/* Writes up to capacity values and their number to *count. */
int optgen_get_hyper(optgen_optimizer *optimizer, const char *group,
                     const char *name, double *values, int64_t capacity,
                     int64_t *count);

/* The parameter's memory and its gradient's move (same dtype, shape and
 * device as registered); the next step reads and writes them there. */
int optgen_rebind(optgen_optimizer *optimizer, const char *name,
                  const optgen_tensor *param, const optgen_tensor *grad);
int optgen_step(optgen_optimizer *optimizer);

/* After optgen_finalize(). */
int optgen_group_of(optgen_optimizer *optimizer, const char *param,
                    const char **group);
int optgen_step_count(optgen_optimizer *optimizer, const char *param,
                      int64_t *steps);
int optgen_skipped_steps(optgen_optimizer *optimizer, int64_t *steps);
/* The value the last step gave the spec's global `name` (`global NAME(p, g)
 * = ...`: a gradient norm, say), the same on every rank. */
int optgen_global_value(optgen_optimizer *optimizer, const char *name,
                        double *value);
int optgen_state_bytes(optgen_optimizer *optimizer, int64_t *bytes);
int optgen_describe_plan(optgen_optimizer *optimizer, const char **plan);

/* Checkpoints as files (OptimizerFront::saveState / loadState), every rank
 * calling them. */
int optgen_save_state(optgen_optimizer *optimizer, const char *path);
int optgen_load_state(optgen_optimizer *optimizer, const char *path);

/* Checkpoints in memory (OptimizerFront::exportState / importState), every
 * rank calling them: an exported checkpoint holds all of the state on every
 * rank, and owns its tensors; one to import holds views of the caller's
 * host memory, which must stay valid until optgen_import_state() returns.
 * `source` names it in errors. */
int optgen_export_state(optgen_optimizer *optimizer, optgen_checkpoint **out);
int optgen_import_state(optgen_optimizer *optimizer,
                        const optgen_checkpoint *checkpoint,
                        const char *source);
optgen_checkpoint *optgen_checkpoint_create(void);
void optgen_checkpoint_destroy(optgen_checkpoint *checkpoint);
/* The metadata as one JSON object of strings. */
int optgen_checkpoint_metadata(optgen_checkpoint *checkpoint,
                               const char **json);
int optgen_checkpoint_set_metadata(optgen_checkpoint *checkpoint,
                                   const char *json);
/* -1 for a handle that is not a live checkpoint (optgen_last_error()). */
int64_t optgen_checkpoint_tensor_count(const optgen_checkpoint *checkpoint);
/* Tensor `index` (in name order): its name and a view of its memory. */
int optgen_checkpoint_tensor(const optgen_checkpoint *checkpoint,
                             int64_t index, const char **name,
                             optgen_tensor *tensor);
int optgen_checkpoint_add_tensor(optgen_checkpoint *checkpoint,
                                 const char *name, const optgen_tensor *tensor);

#ifdef __cplusplus
}
#endif

#endif /* OPTGEN_RUNTIME_CAPI_H */
