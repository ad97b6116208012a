// An MCP server over stdio for the tests of `leash mcp`, without the SDK so that fifty start at once in
// little time: writes its pid, as the name of an empty file, in the folder its first argument names, so
// that a test can tell whether it still runs. Its tools: `echo`; `hold`, answered once `release` is
// called; `release`.
/* global process */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const [pids] = process.argv.slice(2);
if (pids !== undefined) writeFileSync(join(pids, String(process.pid)), '');

const inputSchema = { type: 'object', properties: { message: { type: 'string' } } };
const tools = ['echo', 'hold', 'release'].map((name) => ({
  name,
  inputSchema,
  annotations: { readOnlyHint: true },
}));
const text = (t) => ({ content: [{ type: 'text', text: t }] });
/** The ids of the `hold` calls waiting for a `release`. */
let held = [];

const send = (message) => process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
const answer = (id, result) => send({ id, result });

createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return; // a notification
  if (method === 'initialize') {
    answer(id, {
      protocolVersion: params.protocolVersion,
      capabilities: { tools: {} },
      serverInfo: { name: 'fixture', version: '1' },
    });
  } else if (method === 'tools/list') answer(id, { tools });
  else if (method === 'tools/call' && params.name === 'hold') held.push(id);
  else if (method === 'tools/call' && params.name === 'release') {
    for (const h of held) answer(h, text('released'));
    held = [];
    answer(id, text('released'));
  } else if (method === 'tools/call') answer(id, text(String(params.arguments?.message ?? '')));
  else if (method === 'ping') answer(id, {});
  else send({ id, error: { code: -32601, message: `no method ${method}` } });
});
