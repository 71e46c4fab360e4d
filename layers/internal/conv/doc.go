// Package conv holds the kernels of the layers package's convolutional cell
// and encoder: im2col and its adjoint col2im for 2-D convolutions on
// channel-major (CHW) images, stride-1 3×3 convolutions of whole batches as
// nine shifted matrix products without im2col (Shifted, in float64 or
// float32), a matrix multiply that stays on gonum's serial path (so that
// it never allocates), and the Fourier bound on the operator norm of a
// zero-padded convolution. It is internal: its names are not part of the
// module's API.
package conv
