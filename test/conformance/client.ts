// The MCP client the conformance suite's client scenarios run (`node --import tsx client.ts <url>`, the
// scenario's name in MCP_CONFORMANCE_SCENARIO): the MCP SDK's Client doing what the scenario asks,
// against the suite's test server directly, or through `leash mcp --upstream-url <url>` over stdio when
// LEASH_CONFORMANCE_DB names the store leash is to open. An error ends it with exit 1.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { leashArgs } from '../support/leashBin.js';

/** What each scenario asks the client to do, once connected. */
const SCENARIOS: Readonly<Record<string, (client: Client) => Promise<unknown>>> = {
  // The handshake, then the tools, as the suite's own client does; only from a server that has tools.
  initialize: async (client) => client.getServerCapabilities()?.tools && (await client.listTools()),
  tools_call: (client) => client.callTool({ name: 'add_numbers', arguments: { a: 5, b: 3 } }),
  // The server asks for a form whose every field has a default; the client accepts it empty, and the
  // SDK fills in the defaults (applyDefaults).
  'elicitation-sep1034-client-defaults': (client) =>
    client.callTool({ name: 'test_client_elicitation_defaults', arguments: {} }),
  // The server closes the call's stream after an SSE `retry`; the answer comes on the resumed stream.
  'sse-retry': (client) => client.callTool({ name: 'test_reconnection', arguments: {} }),
};

function transportTo(url: string, db: string | undefined): Transport {
  if (db === undefined) return new StreamableHTTPClientTransport(new URL(url));
  return new StdioClientTransport({
    command: process.execPath,
    args: leashArgs('mcp', '--db', db, '--upstream-url', url),
    stderr: 'inherit',
  });
}

const url = process.argv.at(-1) as string;
const scenario = process.env['MCP_CONFORMANCE_SCENARIO'] ?? '';
const play = SCENARIOS[scenario];
if (play === undefined) throw new Error(`no way to play the scenario "${scenario}"`);
const client = new Client(
  { name: 'leash-conformance-client', version: '1.0.0' },
  { capabilities: { elicitation: { form: { applyDefaults: true } } } },
);
client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: {} }));
await client.connect(transportTo(url, process.env['LEASH_CONFORMANCE_DB']));
try {
  await play(client);
} finally {
  await client.close();
}
