// sends a raw legacy transaction
>> {"jsonrpc":"2.0","id":1,"method":"eth_sendRawTransaction","params":["0xf86c808401a213988261a894aa000000000000000000000000000000000000000a8255448718e5bb3abd109fa073fbe7ff7e74339e7cc61fb3cb3f7630cd3f1d5fef653d7297654b2d22894daea042a188d30f35f19408c73c803bc1e9e17ce129c457e31fd2a368b54507af2f4c"]}
<< {"jsonrpc":"2.0","id":1,"result":"0xb55b6dfd4ba0bb2b00283b0e84cda496c90bc7c5ae9025e07edc3a7fbaf6a269"}
