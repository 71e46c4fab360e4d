package report

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestNumberJSON(t *testing.T) {
	b, err := json.Marshal([]Number{1.5, Number(math.NaN()), Number(math.Inf(1)), 2e-7})
	require.NoError(t, err)
	require.Equal(t, `[1.5,null,null,2e-07]`, string(b))
	var back []Number
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, Number(1.5), back[0])
	require.True(t, math.IsNaN(float64(back[1])))
	require.Equal(t, Number(2e-7), back[3])
}

func TestMarkdownCells(t *testing.T) {
	inf := Number(math.Inf(1))
	e := EpsResult{Samples: []Number{1, 2, inf}, Reached: 2, Median: 2, P90: inf}
	require.Equal(t, "2 (> budget) [2/3]", cellText(e, 100))
	e = EpsResult{Samples: []Number{inf, inf, 5}, Reached: 1, Median: inf, P90: inf}
	require.Equal(t, "not reached [1/3]", cellText(e, 100))
	e = EpsResult{Samples: []Number{12345, 54321}, Reached: 2, Median: 12345, P90: 54321}
	require.Equal(t, "1.23e4 (5.43e4)", cellText(e, 100))
	require.Equal(t, "1.00e5", sci(99999.9))
	require.Equal(t, "3.2e-3", fmtEps(0.00316227766016838))
	require.Equal(t, "1e-1", fmtEps(0.1))
	require.Equal(t, "1e-3", fmtEps(1e-3))
	require.Equal(t, "2.5e0", fmtEps(2.5))
}

// TestMarkdownHeader checks that the report's header names the commit, the
// CPU and its cores, the BLAS and the load at the start and the end, and
// says "unknown" for what the run could not find out.
func TestMarkdownHeader(t *testing.T) {
	rep := &Report{
		Started: time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC), Seconds: 90,
		Machine: Machine{
			CPU: "AMD EPYC 7B13", NumCPU: 2, GOMAXPROCS: 2, BLAS: "openblas",
			Revision: "316eb43f00aa", LoadStart: []float64{0.5, 0.25, 1}, LoadEnd: []float64{2, 1.5, 1.25},
		},
	}
	var b strings.Builder
	require.NoError(t, writeMarkdown(&b, rep, ""))
	header, _, _ := strings.Cut(b.String(), "## Targets")
	for _, want := range []string{
		"at commit 316eb43f00aa on 2026-11-29",
		"on AMD EPYC 7B13 (2 logical CPUs) with BLAS openblas",
		"load average 0.50 0.25 1.00 at the start and 2.00 1.50 1.25 at the end",
		"| commit | 316eb43f00aa |",
		"| load average (1, 5, 15 min) | 0.50 0.25 1.00 at the start, 2.00 1.50 1.25 at the end |",
	} {
		require.Contains(t, header, want)
	}
	rep.Machine = Machine{}
	b.Reset()
	require.NoError(t, writeMarkdown(&b, rep, ""))
	require.Contains(t, b.String(), "at commit unknown on 2026-11-29")
	require.Contains(t, b.String(), "load average unknown at the start and unknown at the end")
}
