// Error: simulates calls with timestamp incrementing over another
>> {"jsonrpc":"2.0","id":1,"method":"eth_simulateV1","params":[{"blockStateCalls":[{"blockOverrides":{"time":"0x227"}},{"blockOverrides":{}},{"blockOverrides":{"time":"0x228"}},{"blockOverrides":{}}]},"latest"]}
<< {"jsonrpc":"2.0","id":1,"error":{"code":-38021,"message":"block timestamps must be in order: 552 \u003c= 563"}}
