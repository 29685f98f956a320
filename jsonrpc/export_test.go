package jsonrpc

// ValidJSON exposes the validator to the benchmarks of package jsonrpc_test.
var ValidJSON = validJSON
