package report

import (
	"encoding/json"
	"math"
	"testing"

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
