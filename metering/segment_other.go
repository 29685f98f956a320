//go:build !linux

package metering

import (
	"errors"
	"os"
)

// mapSegment is Linux only: elsewhere segments are appended to with
// write(2).
func mapSegment(string, int) ([]byte, *os.File, int, error) {
	return nil, nil, 0, errors.ErrUnsupported
}

// unmapSegment is never called where mapSegment fails.
func unmapSegment([]byte) error { return errors.ErrUnsupported }
