// requests code of a non-existent account
>> {"jsonrpc":"2.0","id":1,"method":"eth_getCode","params":["0xc1cadaffffffffffffffffffffffffffffffffff","latest"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x"}
