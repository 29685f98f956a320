// gets the base fee of the next block in wei
>> {"jsonrpc":"2.0","id":1,"method":"eth_baseFee"}
<< {"jsonrpc":"2.0","id":1,"result":"0x16dfe9b"}
