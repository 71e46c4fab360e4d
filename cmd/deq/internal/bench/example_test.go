package bench_test

import (
	"context"
	"fmt"
	"log"

	"github.com/deqgo/deq/cmd/deq/internal/bench"
)

// Run measures, for every stochastic method, the unit samples it needs to
// reach a true residual ε on a problem; the counts depend only on the
// configuration.
func ExampleRun() {
	rep, err := bench.Run(context.Background(), bench.Config{
		Sections: []string{"stochastic"},
		Problems: []string{"shift"},
		Seeds:    3,
		Eps:      []float64{0.1, 0.03},
		// A budget of 3000 times the floor 2σ²κ ln(1/δ)/ε² at ε = 0.03.
		BudgetFactor: 3000,
		SigmaDraws:   500,
	})
	if err != nil {
		log.Fatal(err)
	}
	pr := rep.Stochastic.Problems[0]
	fmt.Printf("%s: floor at ε = 0.03: %.0f samples, budget %d\n", pr.Name, pr.Floor[1], pr.Budget)
	for _, m := range pr.Methods {
		e := m.Eps[1]
		fmt.Printf("%-28s reached %d/3, median %v\n", m.Method, e.Reached, float64(e.Median))
	}
	// Output:
	// shift: floor at ε = 0.03: 67 samples, budget 199716
	// vrghal/bounded-variance      reached 3/3, median 23976
	// vrghal/lipschitz-expectation reached 3/3, median 837
	// vrghal/samplewise-lipschitz  reached 3/3, median 837
	// minibatch-km                 reached 3/3, median 204
	// stochastic-halpern           reached 3/3, median 315
	// page-halpern                 reached 3/3, median 215
	// vrghal/bounded-variance (certified) reached 3/3, median 142739
	// vrghal/lipschitz-expectation (certified) reached 3/3, median 3328
	// vrghal/samplewise-lipschitz (certified) reached 3/3, median 3328
	// minibatch-km (certified)     reached 3/3, median 2679
	// stochastic-halpern (certified) reached 2/3, median 123488
	// page-halpern (certified)     reached 3/3, median 1355
}
