// set block number otherwise empty with latest + 1
>> {"jsonrpc":"2.0","id":1,"method":"eth_simulateV1","params":[{"blockStateCalls":[{}]},"0x37"]}
<< {"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"header not found"}}
