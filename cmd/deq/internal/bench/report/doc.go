// Package report is the output side of `deq bench`: the JSON schema of a
// benchmark run (Report and the section results it holds), the verdicts on
// the project's performance targets (Targets), and the writers that store a
// Report as JSON, PNG plots and a Markdown report (Write, writeMarkdown).
// It measures nothing: package bench (cmd/deq/internal/bench) runs the sections and
// fills in a Report, and imports this package; this package imports
// cmd/deq/internal/plots for the plots' common drawing. It is internal: its names
// are not part of the module's API.
package report
