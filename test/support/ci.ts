/**
 * Whether the tests run under CI: `CI` set to anything but empty, `0` or `false` (CI services set `true`,
 * some `1`). There, tests that need a service or a browser run, and fail without it, rather than skip.
 */
export function onCI(env: Readonly<Record<string, string | undefined>> = process.env): boolean {
  const ci = (env['CI'] ?? '').trim().toLowerCase();
  return !['', '0', 'false'].includes(ci);
}
