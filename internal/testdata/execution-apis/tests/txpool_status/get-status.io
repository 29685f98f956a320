// retrieves the transaction pool status
// speconly: client response is only checked for schema validity.
>> {"jsonrpc":"2.0","id":1,"method":"txpool_status"}
<< {"jsonrpc":"2.0","id":1,"result":{"pending":"0x6","queued":"0x0"}}
