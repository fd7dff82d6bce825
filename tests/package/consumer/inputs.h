/* Inputs of the affine test plan (y = x·w + b, x 32×64, w 64×32, b 1×32) and y computed by
 * plain loops. Values are multiples of 1/16 with small sums, so f32 holds every step exactly. */
#ifndef CONSUMER_INPUTS_H_
#define CONSUMER_INPUTS_H_
enum { M = 32, K = 64, N = 32 };
static float x_of(int i, int k) {
  return (float)((i * 7 + k * 3) % 5 - 2) / 4.0f;
}
static float w_of(int k, int j) {
  return (float)((k * 5 + j) % 5 - 2) / 4.0f;
}
static float b_of(int j) {
  return (float)(j % 7 - 3) / 8.0f;
}
static void fill_inputs(float* x, float* w, float* b) {
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k) x[i * K + k] = x_of(i, k);
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < N; ++j) w[k * N + j] = w_of(k, j);
  for (int j = 0; j < N; ++j) b[j] = b_of(j);
}
static double expected_y(int i, int j) {
  double s = b_of(j);
  for (int k = 0; k < K; ++k) s += (double)x_of(i, k) * (double)w_of(k, j);
  return s;
}
#endif
