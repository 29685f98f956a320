// requests code of an existing contract with the block parameter omitted, which defaults to latest
>> {"jsonrpc":"2.0","id":1,"method":"eth_getCode","params":["0x7dcd17433742f4c0ca53122ab541d0ba67fc27df"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x3680600080376000206000548082558060010160005560005263656d697460206000a2"}
