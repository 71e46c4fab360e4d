package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/cmd/deq/internal/bench/report"
)

// TestRegimeQuick runs the quick regime section and checks its shape and
// accounting: every exact method pays whole exact calls, every method
// with exact certificates at least one exact call (the certifying call),
// the methods with sampled certificates some work, the rows cover
// the grid (the trained cells included: one trained classifier per M,
// whose held-out accuracy is recorded), and the Markdown report has the
// section's table.
func TestRegimeQuick(t *testing.T) {
	rep, err := Run(context.Background(), Config{Quick: true, Sections: []string{sectionRegime}})
	require.NoError(t, err)
	rg := rep.Regime
	require.NotNil(t, rg)
	s, err := Config{Quick: true}.withDefaults()
	require.NoError(t, err)
	g := s.regimeGrid()
	require.Len(t, rg.Rows, len(regimeCells)*len(g.units)*len(g.eps))
	require.NotNil(t, rg.Trained)
	require.Equal(t, s.regimeTraining(g).trainLimit, rg.Trained.Images)
	trained := map[int]float64{}
	for _, r := range rg.Rows {
		require.Positive(t, r.TermRelVar)
		require.Positive(t, r.Contraction)
		if r.Cell == report.RegimeTrained {
			require.Positive(t, r.TestAcc, "M = %d", r.Units)
			require.LessOrEqual(t, r.TestAcc, 1.0)
			if a, ok := trained[r.Units]; ok {
				require.Equal(t, a, r.TestAcc, "M = %d: one trained cell for every ε", r.Units)
			}
			trained[r.Units] = r.TestAcc
		} else {
			require.Zero(t, r.TestAcc)
		}
		require.Len(t, r.Methods, len(regimeMethods(s)))
		t.Logf("%s, M = %d, ε = %g: %s", r.Cell, r.Units, r.Eps, regimeLine(r))
		for _, m := range r.Methods {
			if strings.HasSuffix(m.Method, "+sampled-cert") {
				// A sampled certificate may cost less than one exact call.
				require.Positive(t, m.Exact, m.Method)
			} else {
				require.GreaterOrEqual(t, m.Exact, 1.0, "%s: a certified solve pays at least one exact call", m.Method)
			}
			if m.Method == "broyden" || m.Method == "anderson" {
				require.Equal(t, float64(int(m.Exact)), m.Exact, "%s pays whole exact calls", m.Method)
				require.Equal(t, m.Runs, m.Certified, "%s on the exact cell certifies", m.Method)
			}
			if m.Method == "growing-batch" || m.Method == "growing-batch+sampled-cert" {
				require.Equal(t, m.Runs, m.Certified, "the growing batch's stop is certified")
			}
		}
	}
	dir := t.TempDir()
	_, err = report.Write(rep, dir, "")
	require.NoError(t, err)
	md, err := os.ReadFile(filepath.Join(dir, "BENCHMARKS.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "## Sampled vs exact forward")
	require.Contains(t, string(md), "| redundant | 1024 |")
	require.Contains(t, string(md), "| trained | 256 |")
	require.Contains(t, string(md), "*trained*: the cell of a mean-field classifier")
	require.Len(t, trained, len(g.units))
}
