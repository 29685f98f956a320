// Calls the gateway with viem's HTTP transport, as a dapp would, with the
// headers given: {"url": ..., "headers": {...}} on stdin. Prints
// {"chainId": n} or {"error": message, "status": httpStatus}.
import { createPublicClient, http } from 'viem';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const { url, headers } = JSON.parse(input);
const client = createPublicClient({ transport: http(url, { fetchOptions: { headers: headers || {} }, retryCount: 0 }) });
try {
  const chainId = await client.getChainId();
  console.log(JSON.stringify({ chainId }));
} catch (e) {
  const cause = e.walk ? e.walk((c) => c.status !== undefined) : null;
  console.log(JSON.stringify({ error: e.details || e.shortMessage || e.message, status: cause?.status ?? e.status ?? 0 }));
}
