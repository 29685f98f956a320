// Connects to Portico's MCP endpoint with the official TypeScript SDK's
// Streamable HTTP client, as an agent would. Reads {"url", "bearer",
// "network", "address", "wrongUrl"} on stdin; prints one JSON object: the
// server's name, the tools' names, the structured content of rpc_call
// (eth_chainId) and get_balance, and the error a wrong key's connect got.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const { url, bearer, network, address, wrongUrl } = JSON.parse(input);

async function session(u, headers) {
  const client = new Client({ name: 'portico-interop', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(u), { requestInit: { headers: headers || {} } });
  await client.connect(transport);
  return client;
}

const out = {};
const client = await session(url);
out.server = client.getServerVersion()?.name;
out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
const chain = await client.callTool({ name: 'rpc_call', arguments: { network, method: 'eth_chainId', params: [] } });
out.rpcCall = { isError: !!chain.isError, structured: chain.structuredContent, text: chain.content?.[0]?.text };
const bal = await client.callTool({ name: 'get_balance', arguments: { network, address } });
out.getBalance = { isError: !!bal.isError, structured: bal.structuredContent, text: bal.content?.[0]?.text };
const refused = await client.callTool({ name: 'rpc_call', arguments: { network, method: 'eth_sendRawTransaction', params: ['0x00'] } });
out.refused = { isError: !!refused.isError, text: refused.content?.[0]?.text };
await client.close();

// The key as a bearer token at /mcp.
const viaBearer = await session(url.replace(/\/v3\/[^/]+$/, ''), { Authorization: 'Bearer ' + bearer });
const nets = await viaBearer.callTool({ name: 'list_networks', arguments: {} });
out.bearerNetworks = nets.structuredContent?.networks?.map((n) => n.name);
await viaBearer.close();

try {
  await session(wrongUrl);
  out.wrongKey = 'connected';
} catch (e) {
  out.wrongKey = 'status ' + (e?.code ?? '?') + ': ' + String(e?.message || e);
}
console.log(JSON.stringify(out));
