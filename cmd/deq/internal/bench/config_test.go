package bench

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/cmd/deq/internal/bench/report"
)

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{Sections: []string{"nope"}}, "Sections"},
		{Config{Problems: []string{"mdp", "nope"}}, "Problems"},
		{Config{Seeds: -1}, "Seeds"},
		{Config{Workers: -2}, "Workers"},
		{Config{SampleScale: -1}, "SampleScale"},
		{Config{NoiseLevel: math.NaN()}, "NoiseLevel"},
		{Config{StartDistance: math.Inf(1)}, "StartDistance"},
		{Config{BudgetFactor: -3}, "BudgetFactor"},
		{Config{Delta: 1}, "Delta"},
		{Config{Eps: []float64{}}, "Eps"},
		{Config{Eps: []float64{0.1, 2}}, "Eps[1]"},
		{Config{MaxRunTime: -time.Second}, "MaxRunTime"},
		{Config{TimeTarget: -time.Second}, "TimeTarget"},
		{Config{SigmaDraws: -1}, "SigmaDraws"},
		{Config{OverheadRuns: -1}, "OverheadRuns"},
		{Config{Shape: report.Shape{Batch: 1}}, "Shape"},
	} {
		_, err := tc.cfg.withDefaults()
		require.ErrorContains(t, err, "Config."+tc.field, "%+v", tc.cfg)
	}
}

func TestConfigDefaults(t *testing.T) {
	s, err := Config{}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, Sections(), s.Sections)
	require.Equal(t, defaultSeeds, s.Seeds)
	require.Equal(t, defaultEps(), s.Eps)
	require.InDelta(t, defaultBudgetFactor*2*0.01*math.Log(20)/1e-6, float64(s.budget()), 1)
	q, err := Config{Quick: true, Sections: []string{sectionThroughput, sectionStochastic}, Eps: []float64{0.01, 0.1, 0.01}}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, defaultQuickSeeds, q.Seeds)
	// Sections run in the canonical order; accuracies descend, deduplicated.
	require.Equal(t, []string{sectionStochastic, sectionThroughput}, q.Sections)
	require.Equal(t, []float64{0.1, 0.01}, q.Eps)
}
