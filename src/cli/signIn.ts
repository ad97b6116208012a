// The flags of `leash serve` about signing people in: how long a session lasts, the address people open
// the dashboard at, and an OpenID Connect provider (loaded only when one is named).
import { Option } from 'commander';
import type { SignInOptions } from '../dashboard/signin.js';
import { GuardrailError } from '../errors.js';

export interface SignInFlags {
  readonly publicUrl?: string;
  readonly sessionTtl?: string;
  readonly oidcIssuer?: string;
  readonly oidcClientId?: string;
  readonly oidcUserClaim?: string;
  readonly oidcRolesClaim?: string;
  readonly oidcRole?: readonly string[];
  readonly oidcScope?: string;
}

/** Longest session a flag may ask for: a week. */
const MAX_SESSION_TTL_SECONDS = 7 * 24 * 3600;

export function signInFlags(): Option[] {
  return [
    new Option(
      '--public-url <url>',
      'the address people open the dashboard at, when not the one it listens on (https behind a proxy)',
    ),
    new Option('--session-ttl <seconds>', 'how long a sign-in lasts (default 28800: 8 hours)'),
    new Option('--oidc-issuer <url>', 'also sign people in at this OpenID Connect provider'),
    new Option('--oidc-client-id <id>', "the dashboard's client id there (secret: LEASH_OIDC_CLIENT_SECRET)"),
    new Option('--oidc-user-claim <claim>', 'the claim naming a user by id or e-mail (default email)'),
    new Option('--oidc-roles-claim <claim>', 'a claim listing groups, each a role of the person (groups)'),
    new Option(
      '--oidc-role <group=role>',
      'a group that is a role, named so (repeatable; then only these)',
    ).argParser((value: string, previous: readonly string[] | undefined) => [...(previous ?? []), value]),
    new Option('--oidc-scope <scopes>', 'the scopes asked for (default "openid email profile")'),
  ];
}

/**
 * What the flags ask of signing in. Connects to the provider when one is named, so a wrong one is told
 * before the dashboard starts.
 */
export async function signInOf(
  flags: SignInFlags,
  env: NodeJS.ProcessEnv,
): Promise<{ readonly signIn: SignInOptions; readonly publicUrl?: string }> {
  const base = {
    ...(flags.publicUrl === undefined ? {} : { publicUrl: flags.publicUrl }),
  };
  const sessionTtlSeconds = flags.sessionTtl === undefined ? undefined : sessionTtl(flags.sessionTtl);
  const ttl = sessionTtlSeconds === undefined ? {} : { sessionTtlSeconds };
  const oidcFlags = ['oidcClientId', 'oidcUserClaim', 'oidcRolesClaim', 'oidcRole', 'oidcScope'] as const;
  if (flags.oidcIssuer === undefined) {
    const stray = oidcFlags.find((f) => flags[f] !== undefined);
    if (stray !== undefined) usage(`--${kebab(stray)} needs --oidc-issuer`);
    return { ...base, signIn: ttl };
  }
  if (flags.oidcClientId === undefined) usage('--oidc-issuer needs --oidc-client-id');
  const [{ connectOidc }, { claimMapping }] = await Promise.all([
    import('../dashboard/oidc.js'),
    import('../dashboard/oidcIdentity.js'),
  ]);
  const mapping = claimMapping({
    ...(flags.oidcUserClaim === undefined ? {} : { userClaim: flags.oidcUserClaim }),
    ...(flags.oidcRolesClaim === undefined ? {} : { rolesClaim: flags.oidcRolesClaim }),
    roles: Object.fromEntries((flags.oidcRole ?? []).map(groupRole)),
  });
  const secret = env['LEASH_OIDC_CLIENT_SECRET'];
  const oidc = await connectOidc({
    issuer: flags.oidcIssuer,
    clientId: flags.oidcClientId,
    ...(secret ? { clientSecret: secret } : {}),
    ...(flags.oidcScope === undefined ? {} : { scope: flags.oidcScope }),
  });
  return { ...base, signIn: { ...ttl, oidc, mapping } };
}

function sessionTtl(text: string): number {
  const seconds = Number(text);
  if (!/^\d+$/.test(text) || seconds < 60 || seconds > MAX_SESSION_TTL_SECONDS) {
    usage(
      `--session-ttl must be a whole number of seconds from 60 to ${MAX_SESSION_TTL_SECONDS}, got "${text}"`,
    );
  }
  return seconds;
}

/** `--oidc-role release-team=release` as [group, role]. */
function groupRole(text: string): [string, string] {
  const at = text.lastIndexOf('=');
  if (at <= 0 || at === text.length - 1) usage(`--oidc-role must be GROUP=ROLE, got "${text}"`);
  return [text.slice(0, at), text.slice(at + 1)];
}

function kebab(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

function usage(message: string): never {
  throw new GuardrailError('USAGE', message);
}
