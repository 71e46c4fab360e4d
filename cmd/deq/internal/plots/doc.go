// Package plots draws the PNG plots of the deq command with gonum/plot: the
// loss, accuracy and residual plots of a training run (WriteTraining, for
// `deq train --plot`) and the helpers that the benchmark report's plots
// share with them (log–log axes, line styles, level lines, integer ticks,
// PNG output). It keeps gonum/plot out of the library's packages. It is
// internal: its names are not part of the module's API.
package plots
