// Package layers defines implicit cells f(z, x; θ) for deep equilibrium
// models and the stochastic oracles that evaluate them on minibatches of
// their terms.
package layers
