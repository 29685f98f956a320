// gets nonce for a known account with the block parameter omitted, which defaults to latest
>> {"jsonrpc":"2.0","id":1,"method":"eth_getTransactionCount","params":["0x0300100f529a704d19736a8714837adbc934db7f"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x1"}
