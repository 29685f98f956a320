// gets block empty hash
>> {"jsonrpc":"2.0","id":1,"method":"eth_getBlockByHash","params":["0x0000000000000000000000000000000000000000000000000000000000000000",true]}
<< {"jsonrpc":"2.0","id":1,"result":null}
