package jsonrpc

// ValidJSON exposes the validator to the benchmarks of package jsonrpc_test.
var ValidJSON = validJSON

// OnPause has f called each time c stops reading for its queue.
func OnPause(c *Conn, f func()) { c.onPause = f }
