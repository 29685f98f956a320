//go:build !linux

package main

import (
	"errors"
	"os"
	"os/exec"
)

// startInTerminal needs Linux's /dev/ptmx; elsewhere the README's `make run`
// is not run under a terminal.
func startInTerminal(*exec.Cmd) (*os.File, error) {
	return nil, errors.New("pseudo-terminals are opened on Linux only")
}
