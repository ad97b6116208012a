// The MCP reference server `server-everything`, started over Streamable HTTP for the tests that need a
// real upstream server behind a URL.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const EVERYTHING = fileURLToPath(
  new URL('../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url),
);

/** A port of 127.0.0.1 nobody listens on now (the OS picks it; it is free until someone takes it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

export interface RunningServer {
  /** Its MCP endpoint. */
  readonly url: string;
  /** Stops it; resolves once it exited. */
  readonly stop: () => Promise<void>;
}

/**
 * server-everything over Streamable HTTP, resolved once it listens. It takes its port from `PORT` and
 * logs that variable rather than the port it got, so a free port is picked for it beforehand.
 */
export async function startEverythingHttp(): Promise<RunningServer & { readonly process: ChildProcess }> {
  const port = await freePort();
  const server = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  let stderr = '';
  await new Promise<void>((resolve, reject) => {
    server.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (stderr.includes('listening')) resolve();
    });
    void exited.then(() => reject(new Error(`server-everything exited before it listened: ${stderr}`)));
  });
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    process: server,
    stop: async () => {
      if (server.exitCode === null && server.signalCode === null) server.kill();
      await exited;
    },
  };
}
