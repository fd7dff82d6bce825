/* meshplan-c-example: embeds the runtime through its C API (meshplan.h), as a server written in
 * C or behind an FFI would: open a cache, bind a plan, run it with inputs bound by name.
 *
 *   meshplan-c-example [-v|-q] CACHE.mpc NAME
 *
 * It is C, so it parses its few arguments itself, in the convention of the other tools (--help,
 * --version, -v/-q through the logging hook, exit 1 naming an unknown option). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/runtime/meshplan.h"

static int fail_with(const char* what, mp_status s) {
  fprintf(stderr, "meshplan-c-example: %s: %s: %s\n", what, mp_status_name(s), mp_last_error());
  return 1;
}

static size_t volume(const int64_t* shape, size_t rank) {
  size_t v = 1;
  for (size_t d = 0; d < rank; ++d) v *= (size_t)shape[d];
  return v;
}

static const char kUsage[] =
    "usage: meshplan-c-example [-v|-q] CACHE.mpc NAME\n\n"
    "Runs plan NAME of CACHE.mpc through meshplan's C API with inputs bound by name.\n\n"
    "Options:\n"
    "  -h,--help     Print this help and exit\n"
    "  --version     Print the version and exit\n"
    "  -v,--verbose  Print meshplan's info messages on stderr (-vv: debug messages too)\n"
    "  -q,--quiet    Print only results and errors\n";

static void log_to_stderr(mp_log_level level, const char* message, void* user) {
  static const char* const kNames[] = {"debug", "info", "warning", "error", "off"};
  (void)user;
  fprintf(stderr, "meshplan-c-example: %s: %s\n", kNames[level], message);
}

static int usage_error(const char* what, const char* arg) {
  fprintf(stderr,
          "meshplan-c-example: error: invalid_argument: %s '%s'\n"
          "Run 'meshplan-c-example --help' for the options.\n",
          what, arg);
  return 1;
}

int main(int argc, char** argv) {
  const char* words[2] = {NULL, NULL};
  int n_words = 0, verbose = 0, quiet = 0;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      fputs(kUsage, stdout);
      return 0;
    } else if (strcmp(a, "--version") == 0) {
      printf("meshplan-c-example %s\n", MESHPLAN_VERSION);
      return 0;
    } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
      ++verbose;
    } else if (strcmp(a, "-vv") == 0) {
      verbose += 2;
    } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
      quiet = 1;
    } else if (a[0] == '-' && a[1] != '\0') {
      return usage_error("unknown option", a);
    } else if (n_words < 2) {
      words[n_words++] = a;
    } else {
      return usage_error("unexpected argument", a);
    }
  }
  if (n_words != 2) {
    fprintf(stderr, "meshplan-c-example: error: invalid_argument: give CACHE.mpc and NAME\n%s",
            kUsage);
    return 1;
  }
  mp_set_log_handler(log_to_stderr, NULL,
                     quiet          ? MP_LOG_ERROR
                     : verbose >= 2 ? MP_LOG_DEBUG
                     : verbose == 1 ? MP_LOG_INFO
                                    : MP_LOG_WARNING);
  const char* cache_path = words[0];
  const char* plan_name = words[1];
  mp_cache* cache = NULL;
  mp_status s = mp_cache_open(cache_path, &cache);
  if (s != MP_OK) return fail_with("open", s);
  printf("%zu plan(s) in %s:", mp_cache_size(cache), cache_path);
  for (size_t i = 0; i < mp_cache_size(cache); ++i) printf(" %s", mp_cache_entry_name(cache, i));
  printf("\n");

  mp_executable* exe = NULL;
  s = mp_executable_create(cache, plan_name, &exe);
  if (s != MP_OK) {
    mp_cache_close(cache);
    return fail_with("bind", s);
  }
  size_t n_in = mp_executable_input_count(exe), n_out = mp_executable_output_count(exe);
  mp_tensor* inputs = calloc(n_in + 1, sizeof(mp_tensor));
  mp_tensor* outputs = calloc(n_out + 1, sizeof(mp_tensor));
  int rc = 0;
  if (!inputs || !outputs) {
    fprintf(stderr, "meshplan-c-example: out of host memory\n");
    rc = 1;
    goto done;
  }
  /* Inputs bound by name, filled with a small deterministic pattern. */
  for (size_t i = 0; i < n_in; ++i) {
    size_t rank = 0;
    const int64_t* shape = mp_executable_input_shape(exe, i, &rank);
    size_t n = volume(shape, rank);
    float* data = malloc(n * sizeof(float) + 1);
    if (!data) {
      fprintf(stderr, "meshplan-c-example: cannot allocate %zu bytes for input %zu\n",
              n * sizeof(float), i);
      rc = 1;
      goto done;
    }
    for (size_t k = 0; k < n; ++k) data[k] = (float)((int)((k * 7 + i * 3) % 17) - 8) / 64.0f;
    inputs[i] =
        (mp_tensor){mp_executable_input_name(exe, i), MP_F32, shape, rank, data, n * sizeof(float)};
  }
  for (size_t o = 0; o < n_out; ++o) {
    size_t rank = 0;
    const int64_t* shape = mp_executable_output_shape(exe, o, &rank);
    size_t n = volume(shape, rank);
    outputs[o] =
        (mp_tensor){NULL, MP_F32, shape, rank, malloc(n * sizeof(float) + 1), n * sizeof(float)};
    if (!outputs[o].data) {
      fprintf(stderr, "meshplan-c-example: cannot allocate %zu bytes for output %zu\n",
              n * sizeof(float), o);
      rc = 1;
      goto done;
    }
  }
  uint64_t device_ns = 0;
  s = mp_executable_run(exe, inputs, n_in, outputs, n_out, &device_ns);
  if (s != MP_OK) {
    rc = fail_with("run", s);
  } else {
    printf("ran '%s': %zu input(s), %zu output(s), %.3f us simulated device time\n", plan_name,
           n_in, n_out, device_ns / 1000.0);
    for (size_t o = 0; o < n_out; ++o) {
      const float* y = outputs[o].data;
      double sum = 0;
      for (size_t k = 0; k < outputs[o].size_bytes / sizeof(float); ++k) sum += y[k];
      printf("output %s: first %.5f, sum %.5f\n", mp_executable_output_name(exe, o), y[0], sum);
    }
  }
  /* A wrong shape is reported with the input's name. */
  if (n_in > 0) {
    int64_t bad_shape[1] = {3};
    mp_tensor bad = inputs[0];
    bad.shape = bad_shape;
    bad.rank = 1;
    mp_tensor* again = calloc(n_in, sizeof(mp_tensor));
    if (!again) {
      rc = 1;
      goto done;
    }
    for (size_t i = 0; i < n_in; ++i) again[i] = i == 0 ? bad : inputs[i];
    mp_status e = mp_executable_run(exe, again, n_in, outputs, n_out, NULL);
    printf("with a wrong shape: %s: %s\n", mp_status_name(e), mp_last_error());
    free(again);
  }
done:
  for (size_t i = 0; inputs && i < n_in; ++i) free(inputs[i].data);
  for (size_t o = 0; outputs && o < n_out; ++o) free(outputs[o].data);
  free(inputs);
  free(outputs);
  mp_executable_destroy(exe);
  mp_cache_close(cache);
  return rc;
}
