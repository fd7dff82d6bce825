/* The same run through the installed C API (libmeshplan).
 *   consumer_c CACHE.mpc NAME */
#include <math.h>
#include <stdio.h>

#include "inputs.h"
#include "meshplan/runtime/meshplan.h"

int main(int argc, char** argv) {
  static float x[M * K], w[K * N], b[N], y[M * N];
  const int64_t xs[] = {M, K}, ws[] = {K, N}, bs[] = {1, N}, ys[] = {M, N};
  mp_cache* cache = NULL;
  mp_executable* exe = NULL;
  if (argc != 3) return fprintf(stderr, "usage: consumer_c CACHE.mpc NAME\n"), 64;
  fill_inputs(x, w, b);
  if (mp_cache_open(argv[1], &cache) != MP_OK) return fprintf(stderr, "%s\n", mp_last_error()), 1;
  if (mp_executable_create(cache, argv[2], &exe) != MP_OK)
    return fprintf(stderr, "%s\n", mp_last_error()), 1;
  mp_tensor in[3] = {{"x", MP_F32, xs, 2, x, sizeof x},
                     {"w", MP_F32, ws, 2, w, sizeof w},
                     {"b", MP_F32, bs, 2, b, sizeof b}};
  mp_tensor out = {NULL, MP_F32, ys, 2, y, sizeof y};
  if (mp_executable_run(exe, in, 3, &out, 1, NULL) != MP_OK)
    return fprintf(stderr, "%s\n", mp_last_error()), 1;
  double worst = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double d = fabs(y[i * N + j] - expected_y(i, j));
      if (d > worst) worst = d;
    }
  printf("consumer (C): max abs error %.6f\n", worst);
  mp_executable_destroy(exe);
  mp_cache_close(cache);
  return worst <= 1e-3 ? 0 : 2;
}
