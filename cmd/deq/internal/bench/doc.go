// Package bench measures the project's solvers and cells for `deq bench`:
// the samples the stochastic fixed-point methods need to reach a true
// residual ε (the stochastic section), VR-GHAL's overhead against its
// oracle time, the throughput of DEQ cell evaluations against plain matrix
// multiplies, the evaluations the deterministic solvers need on a trained
// DEQ (the forward section), and the arithmetic throughput and memory of
// training epochs.
//
// Run returns a report.Report; package report
// (cmd/deq/internal/bench/report), which this package imports and which
// imports nothing of it, judges the performance targets and writes the
// JSON, PNG plots and Markdown report. The command is a thin wrapper
// around Run and report.Write. The sections' methods and limits are
// described in docs/performance.md in the repository.
//
// It is internal: its names are not part of the module's API.
package bench
