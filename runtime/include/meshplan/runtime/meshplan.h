/* meshplan's C API: open a plan cache, bind a plan to an emulated device, run it. For servers
 * written in C or in any language with a C FFI.
 *
 * Conventions: every fallible call returns an mp_status; on failure mp_last_error() returns the
 * message (naming the plan, input, value or file involved) for the calling thread, valid until
 * that thread's next failing call. Handles are opaque. An mp_cache may be used from many
 * threads at once; an mp_executable may be run from many threads (runs on one executable are
 * serialised; create one executable per thread to run in parallel). The cache must outlive the
 * executables created from it. Host tensors are caller memory: row-major, dtype MP_F32.
 * Mesh plans (made for a mesh of chips) run through the same handles on the emulated mesh their
 * header names; their input and output shapes are the host (full) shapes (identity-sharded
 * boundaries, whose host buffers hold one tensor per chip, are not supported here). */
#ifndef MESHPLAN_RUNTIME_MESHPLAN_H_
#define MESHPLAN_RUNTIME_MESHPLAN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mp_status {
  MP_OK = 0,
  /* A bad argument of the call: NULL pointer, unknown input name, wrong input/output count,
   * shape, dtype or byte size; a path that names a folder or another non-regular file. */
  MP_INVALID_ARGUMENT = 1,
  /* mp_cache_open: no such file; mp_executable_create: no plan of that name in the cache. */
  MP_NOT_FOUND = 2,
  /* The cache's format major version is not this library's; the plan's format major, planner
   * or device descriptor is not one this library runs. */
  MP_INCOMPATIBLE = 3,
  /* Memory ran out: the host's (opening a cache, running a plan), or a plan tensor does not fit
   * the emulated device it binds to. */
  MP_RESOURCE_EXHAUSTED = 4,
  /* Damaged file or plan: truncated, bad magic or identifier, checksum mismatch, a plan that
   * fails verification. mp_cache_open checks the header and index; mp_executable_create the
   * plan. */
  MP_CORRUPT = 5,
  /* The operating system refused the file: stat, open or mmap failed other than "no such
   * file" (e.g. a path through a regular file, a name too long, no permission). */
  MP_IO = 6,
  /* Not returned by these calls today (reserved: a plan feature this library lacks). */
  MP_UNIMPLEMENTED = 7,
  /* A bug in meshplan (an invariant broke); the message says which. Never expected. */
  MP_INTERNAL = 8
} mp_status;

typedef enum mp_dtype { MP_F32 = 0 } mp_dtype;

/* A host tensor in caller memory. For inputs `data` is read; for outputs it is written. `name`
 * binds inputs by name (NULL: bind by position); for outputs it is ignored. */
typedef struct mp_tensor {
  const char* name;
  mp_dtype dtype;
  const int64_t* shape;
  size_t rank;
  void* data;
  size_t size_bytes;
} mp_tensor;

typedef struct mp_cache mp_cache;
typedef struct mp_executable mp_executable;

/* Logging: meshplan's messages (cache opened, damaged entries, plans bound...) at `min_level`
 * and above go to `fn` with `user`; `message` is NUL-terminated and valid during the call only.
 * `fn` may be called from several threads at once. NULL or MP_LOG_OFF silences meshplan (the
 * default: the library prints nothing). Process-wide; shared with the C++ API's set_log_sink. */
typedef enum mp_log_level {
  MP_LOG_DEBUG = 0,
  MP_LOG_INFO = 1,
  MP_LOG_WARNING = 2,
  MP_LOG_ERROR = 3,
  MP_LOG_OFF = 4
} mp_log_level;
typedef void (*mp_log_fn)(mp_log_level level, const char* message, void* user);
void mp_set_log_handler(mp_log_fn fn, void* user, mp_log_level min_level);

/* Name of a status, e.g. "corrupt". Never NULL. */
const char* mp_status_name(mp_status status);
/* Message of the calling thread's last failing call ("" if none). */
const char* mp_last_error(void);

/* Maps a plan cache file. Free with mp_cache_close. */
mp_status mp_cache_open(const char* path, mp_cache** out);
void mp_cache_close(mp_cache* cache);
size_t mp_cache_size(const mp_cache* cache);
/* Name of entry i (NUL-terminated, valid while the cache is open), or NULL if out of range. */
const char* mp_cache_entry_name(const mp_cache* cache, size_t i);

/* Finds the plan `name`, verifies it, creates the emulated mesh it was made for (a 1x1 mesh of
 * its chip for a single-chip plan) and binds the plan to it. Free with mp_executable_destroy. */
mp_status mp_executable_create(const mp_cache* cache, const char* name, mp_executable** out);
void mp_executable_destroy(mp_executable* exe);

size_t mp_executable_input_count(const mp_executable* exe);
size_t mp_executable_output_count(const mp_executable* exe);
/* Name (NUL-terminated; empty if the plan has none) and shape of input/output i; NULL/0 if out of
 * range. */
const char* mp_executable_input_name(const mp_executable* exe, size_t i);
const char* mp_executable_output_name(const mp_executable* exe, size_t i);
const int64_t* mp_executable_input_shape(const mp_executable* exe, size_t i, size_t* rank);
const int64_t* mp_executable_output_shape(const mp_executable* exe, size_t i, size_t* rank);

/* Runs the plan. Inputs are bound by name if every input has a name, else by position; shapes,
 * dtypes and byte sizes are checked and errors name the offending input. Outputs are written
 * in plan order into caller tensors whose shape and size must match. `device_ns` (may be NULL)
 * receives the simulated device time. */
mp_status mp_executable_run(mp_executable* exe, const mp_tensor* inputs, size_t input_count,
                            mp_tensor* outputs, size_t output_count, uint64_t* device_ns);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MESHPLAN_RUNTIME_MESHPLAN_H_ */
