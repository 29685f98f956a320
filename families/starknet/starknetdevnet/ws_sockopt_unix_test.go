//go:build unix

package starknetdevnet

import "syscall"

// smallReceiveBuffer sets a socket's receive buffer to a few KiB, which
// also turns off the kernel's growing of it: a client that does not read
// then lets little pile up in the kernel, and the server's own queue fills
// soon.
func smallReceiveBuffer(_, _ string, c syscall.RawConn) error {
	var err error
	if cerr := c.Control(func(fd uintptr) {
		err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
	}); cerr != nil {
		return cerr
	}
	return err
}
