package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// cpuProfile is the CPU profile of --cpuprofile: its file, created before
// the run opens anything else, so that a path that cannot be written fails
// first; the profile itself covers the training epochs. A nil *cpuProfile
// (no --cpuprofile) does nothing.
type cpuProfile struct {
	file    *os.File
	running bool
}

// createProfile creates the file at path, or returns nil when path is
// empty.
func createProfile(path string) (*cpuProfile, error) {
	if path == "" {
		return nil, nil
	}
	file, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return &cpuProfile{file: file}, nil
}

// start starts profiling into the file.
func (p *cpuProfile) start() error {
	if p == nil {
		return nil
	}
	if err := pprof.StartCPUProfile(p.file); err != nil {
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	p.running = true
	return nil
}

// stop stops profiling and closes the file, reporting a failure to write
// it.
func (p *cpuProfile) stop() error {
	if p == nil || p.file == nil {
		return nil
	}
	if p.running {
		pprof.StopCPUProfile()
		p.running = false
	}
	err := p.file.Close()
	p.file = nil
	if err != nil {
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	return nil
}

// close stops and closes whatever is still open, for the paths that return
// early.
func (p *cpuProfile) close() { _ = p.stop() }
