// Package datasets reads, discovers, downloads and synthesises MNIST-style
// image classification data and delivers it in batches.
package datasets
