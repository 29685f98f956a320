// requests a block number that does not exist
>> {"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x3e8",true]}
<< {"jsonrpc":"2.0","id":1,"result":null}
