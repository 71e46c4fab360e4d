// Command deq trains, evaluates and benchmarks deep equilibrium models and
// solves fixed-point problems with certified stochastic solvers.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "deq: no commands yet")
	os.Exit(2)
}
