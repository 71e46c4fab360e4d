package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// loadAverage returns the machine's 1-, 5- and 15-minute load averages
// from /proc/loadavg, or nil where they are unknown.
func loadAverage() []float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	l, err := parseLoadAvg(string(b))
	if err != nil {
		return nil
	}
	return l
}

// parseLoadAvg reads the three load averages at the start of the text of
// /proc/loadavg ("0.52 0.61 0.70 1/234 5678").
func parseLoadAvg(s string) ([]float64, error) {
	f := strings.Fields(s)
	if len(f) < 3 {
		return nil, fmt.Errorf("bench: load average %q: want three numbers", s)
	}
	l := make([]float64, 3)
	for i := range l {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("bench: load average %q: field %d is not a load", s, i+1)
		}
		l[i] = v
	}
	return l, nil
}

// vcsRevision returns the VCS revision among a binary's build settings,
// with "+modified" when the working tree had uncommitted changes, or "" when
// the build was not stamped (go run and go test builds are not).
func vcsRevision(settings []debug.BuildSetting) string {
	var rev, dirty string
	for _, kv := range settings {
		switch kv.Key {
		case "vcs.revision":
			rev = kv.Value
		case "vcs.modified":
			if kv.Value == "true" {
				dirty = "+modified"
			}
		}
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}

// gitDescribe returns `git describe --always --dirty` of the working
// directory (the commit, "-dirty" for uncommitted changes), or "" when git
// or a repository is missing. It gives up after ten seconds.
func gitDescribe() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty", "--abbrev=12").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
