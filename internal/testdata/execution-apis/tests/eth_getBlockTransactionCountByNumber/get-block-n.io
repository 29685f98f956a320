// gets tx count in a non-empty block
>> {"jsonrpc":"2.0","id":1,"method":"eth_getBlockTransactionCountByNumber","params":["0x1"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x4"}
