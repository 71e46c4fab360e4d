package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/train"
)

// corruptionResult is the accuracy of a model on one corruption of the
// test set, in `deq eval --corruptions`' report.
type corruptionResult struct {
	Name string `json:"name"`
	// Group is "mnist-c" for the corruptions of MNIST-C and "extra" for
	// the others.
	Group    string             `json:"group"`
	Examples int                `json:"examples"`
	Correct  int                `json:"correct"`
	Acc      number             `json:"acc"`
	Loss     number             `json:"loss"`
	Stats    train.SolveSummary `json:"solver_stats"`
}

// corruptionSummary is the suite's part of `deq eval --json`.
type corruptionSummary struct {
	Seed    uint64             `json:"seed"`
	MeanAcc number             `json:"mean_acc"`
	MinAcc  number             `json:"min_acc"`
	Results []corruptionResult `json:"results"`
}

// parseCorruptions parses the value of --corruptions: "all", "mnist-c"
// or a comma-separated list of names.
func parseCorruptions(s string) ([]datasets.Corruption, error) {
	switch s {
	case "":
		return nil, nil
	case "all":
		return datasets.Corruptions(), nil
	case "mnist-c":
		return datasets.MNISTCCorruptions(), nil
	}
	var out []datasets.Corruption
	seen := map[datasets.Corruption]bool{}
	for _, name := range strings.Split(s, ",") {
		c, err := datasets.ParseCorruption(strings.TrimSpace(name))
		if err != nil {
			return nil, usagef("--corruptions: %q is not all, mnist-c or a corruption (%s)", name, strings.Join(datasets.CorruptionNames(), ", "))
		}
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out, nil
}

// evalCorruptions evaluates m with s on each corruption cs of test, drawn
// from seed.
func evalCorruptions(ctx context.Context, m *train.Model, test *datasets.Dataset, cs []datasets.Corruption, seed uint64, s train.SolverConfig, batch int) (*corruptionSummary, error) {
	sum := &corruptionSummary{Seed: seed}
	total := 0.0
	for i, c := range cs {
		ds, err := datasets.Corrupt(ctx, test, c, seed)
		if err != nil {
			return nil, err
		}
		em, err := m.Evaluate(ctx, ds, s, batch)
		if err != nil {
			return nil, err
		}
		group := "extra"
		if c.InMNISTC() {
			group = "mnist-c"
		}
		sum.Results = append(sum.Results, corruptionResult{
			Name: c.String(), Group: group, Examples: em.Examples, Correct: em.Correct,
			Acc: number(em.Accuracy), Loss: number(em.Loss), Stats: em.Solver,
		})
		total += em.Accuracy
		if i == 0 || em.Accuracy < float64(sum.MinAcc) {
			sum.MinAcc = number(em.Accuracy)
		}
	}
	if len(cs) > 0 {
		sum.MeanAcc = number(total / float64(len(cs)))
	}
	return sum, nil
}

// write prints the suite's table.
func (s *corruptionSummary) write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "corruption\tgroup\taccuracy\tloss\titerations\tunconverged\tcertified ≤ tol\n")
	for _, r := range s.Results {
		fmt.Fprintf(tw, "%s\t%s\t%.2f%% (%d/%d)\t%.4f\t%.1f\t%d/%d\t%.1f%%\n", r.Name, r.Group, 100*float64(r.Acc), r.Correct, r.Examples,
			float64(r.Loss), r.Stats.ItersMean, r.Stats.Unconverged, r.Stats.Solves, 100*r.Stats.CertMetFrac)
	}
	fmt.Fprintf(tw, "mean\t%.2f%%\n", 100*float64(s.MeanAcc))
	fmt.Fprintf(tw, "min\t%.2f%%\n", 100*float64(s.MinAcc))
	return tw.Flush()
}
