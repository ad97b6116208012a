import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import type { Hono } from 'hono';
import type { Clock } from '../clock.js';
import type { CommandStyle } from '../runner/commandLine.js';
import type { PlanRunner } from '../runner/runner.js';
import { createDashboardApp } from './app.js';
import type { DashboardEnv, SignInOptions } from './signin.js';
import { accessToken, allowedHostsFor, bracketed, publicOriginOf, TOKEN_COOKIE } from './security.js';

export interface DashboardOptions {
  runner: PlanRunner;
  /** Address to bind; keep a loopback one (the CLI's default is 127.0.0.1) unless you know why. */
  host: string;
  /** Port to listen on; 0 picks a free one (see the returned `url`). */
  port: number;
  /**
   * Access token, at least 32 characters (`leash serve` takes it from LEASH_TOKEN); 32 random bytes
   * (base64url) when not given.
   */
  token?: string;
  clock?: Clock;
  /** Where errors of requests and of background runs are written. */
  log?: (line: string) => void;
  /** How the `leash` commands the pages show start, and their store; default `npx leash`, no `--db`. */
  style?: CommandStyle;
  /** How people sign in once the store has principals (see `createDashboardApp`). */
  signIn?: SignInOptions;
  /**
   * The address people open the dashboard at, when not the one it listens on (https, behind a proxy).
   * An OpenID Connect provider sends people back to it.
   */
  publicUrl?: string;
}

export interface RunningDashboard {
  /** Where it listens, with the actual port: `http://127.0.0.1:4580`. */
  readonly url: string;
  readonly token: string;
  /**
   * Stops listening, then waits for the resumes the dashboard started to finish. A process killed
   * outright cannot: the plan it ran stays in phase `execute`.
   */
  close(): Promise<void>;
}

/**
 * Starts the dashboard's HTTP server on `host:port`.
 * @example
 * const { url, token, close } = await startDashboard({ runner, host: '127.0.0.1', port: 0 });
 * console.log(`${url}/?token=${token}`);
 */
export async function startDashboard(o: DashboardOptions): Promise<RunningDashboard> {
  // Checked before listening, so a refused token or address leaves no port open.
  const token = accessToken(o.token, '`leash serve`');
  if (o.publicUrl !== undefined) publicOriginOf(o.publicUrl);
  const log = o.log ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const running = new Set<Promise<unknown>>();
  // The app is made once the port is known (its allowed Host names carry it); nothing arrives before.
  const ready: { app?: Hono<DashboardEnv> } = {};
  const server = createAdaptorServer({
    fetch: (request, env) =>
      ready.app === undefined ? new Response('starting\n', { status: 503 }) : ready.app.fetch(request, env),
    overrideGlobalObjects: false,
  }) as Server;
  await new Promise<void>((resolve, reject) => {
    const failed = (error: Error) => reject(error);
    server.once('error', failed);
    server.listen(o.port, o.host, () => {
      server.off('error', failed);
      resolve();
    });
  });
  server.on('error', (error) => log(`dashboard server: ${error.message}`));
  const port = (server.address() as AddressInfo).port;
  ready.app = createDashboardApp({
    runner: o.runner,
    token,
    // Cookies ignore ports: named after this one, a second dashboard on the host keeps its own session.
    cookieName: `${TOKEN_COOKIE}_${port}`,
    log,
    ...(o.clock === undefined ? {} : { clock: o.clock }),
    ...(o.style === undefined ? {} : { style: o.style }),
    ...(o.signIn === undefined ? {} : { signIn: o.signIn }),
    ...(o.publicUrl === undefined ? {} : { publicUrl: o.publicUrl }),
    onBackground: (run) => {
      running.add(run);
      void run.finally(() => running.delete(run));
    },
    allowedHosts: allowedHostsFor(o.host, port),
  });

  return {
    url: `http://${bracketed(o.host)}:${port}`,
    token,
    async close() {
      await new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeIdleConnections();
      });
      if (running.size > 0) log(`waiting for ${running.size} resumed plan(s) to finish…`);
      await Promise.all([...running]);
    },
  };
}
