// gets tx count in a non-empty block
>> {"jsonrpc":"2.0","id":1,"method":"eth_getBlockTransactionCountByHash","params":["0x80e911b62f552f563a2544dfef5eb39ec8863d9082c998ca6b657f76e19de38e"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x4"}
