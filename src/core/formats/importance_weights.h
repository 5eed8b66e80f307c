// The weights the k-quant and IQ4_XS searches give the values of a
// sub-block when they compare encodings by weighted squared error:
//   w[i] = |x[i]| + rms(x)
// so that errors on large values cost more, while small ones still count.
#pragma once

namespace kvforge {

// x, w: n values.
void importance_weights(const float* x, int n, float* w);

// The value of largest magnitude among x's n, sign kept (the first of
// equals; 0 for none): where the searches anchor a sub-block's scale.
float largest_magnitude(const float* x, int n);

}  // namespace kvforge
