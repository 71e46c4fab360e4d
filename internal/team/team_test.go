package team

import (
	"sync/atomic"
	"testing"
)

func TestTeamRunCoversRange(t *testing.T) {
	for _, tc := range []struct{ parts, n int }{{1, 5}, {2, 1}, {2, 7}, {3, 10}, {4, 3}} {
		team := New(tc.parts)
		hits := make([]atomic.Int32, tc.n)
		used := team.Run(tc.n, func(_, lo, hi int) {
			for i := lo; i < hi; i++ {
				hits[i].Add(1)
			}
		})
		team.Close()
		if want := max(min(tc.parts, tc.n), 1); used != want {
			t.Errorf("parts %d, n %d: Run used %d parts, want %d", tc.parts, tc.n, used, want)
		}
		for i := range hits {
			if h := hits[i].Load(); h != 1 {
				t.Errorf("parts %d, n %d: index %d visited %d times", tc.parts, tc.n, i, h)
			}
		}
	}
}

// BenchmarkTeamRun is the cost of one Run of two parts that do nearly
// nothing: the latency of handing a part to a helper and waiting for it.
func BenchmarkTeamRun(b *testing.B) {
	team := New(2)
	defer team.Close()
	var sink atomic.Int64
	fn := func(p, lo, hi int) { sink.Add(int64(hi - lo)) }
	for b.Loop() {
		team.Run(2, fn)
	}
}
