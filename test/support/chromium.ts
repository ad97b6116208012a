/** Debian's Chromium, which `.ci/run` installs; nothing is downloaded. */
export const CHROMIUM = '/usr/bin/chromium';

/** Headless, and quiet on a machine with no network but loopback: no background connections. */
export const CHROMIUM_ARGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
