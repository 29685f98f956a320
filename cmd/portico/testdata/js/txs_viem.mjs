// Signs and sends transfers through the gateway with viem, as a wallet
// would: {"url", "key", "count", "to"} on stdin. The first count-1 go with
// eth_sendRawTransaction, the last with eth_sendRawTransactionSync
// (viem's sendRawTransactionSync), which answers its receipt. Prints
// {"hashes": [...], "status": receipt status, "block": n} or
// {"error": message}.
import { createPublicClient, createWalletClient, http } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { sendRawTransactionSync } from 'viem/actions';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const { url, key, count, to } = JSON.parse(input);
const account = privateKeyToAccount(key);
const transport = http(url, { retryCount: 0, timeout: 60_000 });
const pub = createPublicClient({ transport });
const wallet = createWalletClient({ account, transport });
try {
  const chainId = await pub.getChainId();
  const start = await pub.getTransactionCount({ address: account.address, blockTag: 'pending' });
  const hashes = [];
  let receipt;
  for (let i = 0; i < count; i++) {
    const signed = await wallet.signTransaction({
      chain: null, chainId, nonce: start + i, to, value: BigInt(i + 1), gas: 21000n,
      maxFeePerGas: 100_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n,
    });
    if (i < count - 1) {
      hashes.push(await wallet.sendRawTransaction({ serializedTransaction: signed }));
    } else {
      receipt = await sendRawTransactionSync(wallet, { serializedTransaction: signed, timeout: 45_000 });
      hashes.push(receipt.transactionHash);
    }
  }
  console.log(JSON.stringify({ hashes, status: receipt.status, block: Number(receipt.blockNumber) }));
} catch (e) {
  console.log(JSON.stringify({ error: e.details || e.shortMessage || e.message }));
}
