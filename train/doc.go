// Package train trains DEQ classifiers: encoder → DEQ layer → linear readout.
package train
