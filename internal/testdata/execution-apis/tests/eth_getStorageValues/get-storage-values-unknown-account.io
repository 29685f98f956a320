// gets storage values for a non-existent account
>> {"jsonrpc":"2.0","id":1,"method":"eth_getStorageValues","params":[{"0xc1cadaffffffffffffffffffffffffffffffffff":["0x0100000000000000000000000000000000000000000000000000000000000000"]},"latest"]}
<< {"jsonrpc":"2.0","id":1,"result":{"0xc1cadaffffffffffffffffffffffffffffffffff":["0x0000000000000000000000000000000000000000000000000000000000000000"]}}
