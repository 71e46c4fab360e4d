package bench

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseLoadAvg(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []float64
		err  bool
	}{
		{"0.52 0.61 0.70 1/234 5678\n", []float64{0.52, 0.61, 0.70}, false},
		{"12.00 3.50 0.00", []float64{12, 3.5, 0}, false},
		{"0.52 0.61", nil, true},
		{"0.52 x 0.70 1/2 3", nil, true},
		{"-1 0 0 1/2 3", nil, true},
	} {
		got, err := parseLoadAvg(tc.in)
		if tc.err {
			require.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.InDeltaSlice(t, tc.want, got, 1e-12, tc.in)
	}
}

func TestVCSRevision(t *testing.T) {
	rev := debug.BuildSetting{Key: "vcs.revision", Value: "316eb43f00"}
	require.Equal(t, "316eb43f00", vcsRevision([]debug.BuildSetting{rev, {Key: "vcs.modified", Value: "false"}}))
	require.Equal(t, "316eb43f00+modified", vcsRevision([]debug.BuildSetting{{Key: "vcs.modified", Value: "true"}, rev}))
	require.Equal(t, "", vcsRevision([]debug.BuildSetting{{Key: "vcs.modified", Value: "true"}}))
	require.Equal(t, "", vcsRevision(nil))
}

// TestMachineHeader checks that the machine a run describes carries the
// load average and, in a git checkout, the commit (go test builds are not
// stamped, so it comes from git describe).
func TestMachineHeader(t *testing.T) {
	m := machine()
	require.NotZero(t, m.NumCPU)
	require.NotEmpty(t, m.BLAS)
	if b, err := os.ReadFile("/proc/loadavg"); err == nil && len(b) > 0 {
		require.Len(t, m.LoadStart, 3)
	}
	if gitDescribe() != "" {
		require.NotEmpty(t, m.Revision)
	}
}
