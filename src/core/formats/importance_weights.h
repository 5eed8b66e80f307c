// The weights the k-quant and IQ4_XS searches give the values of a
// sub-block when they compare encodings by weighted squared error:
//   w[i] = |x[i]| + rms(x)
// so that errors on large values cost more, while small ones still count.
#pragma once

namespace kvforge {

// x, w: n values.
void importance_weights(const float* x, int n, float* w);

}  // namespace kvforge
