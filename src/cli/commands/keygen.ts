// `leash keygen`.
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { keyFingerprint } from '../../audit/export/bundle.js';
import { GuardrailError } from '../../errors.js';
import type { CliContext } from '../context.js';
import type { Command } from 'commander';

export function registerKeygen(program: Command, c: CliContext): void {
  const { io, print } = c;
  program
    .command('keygen')
    .description(
      'make an Ed25519 key pair for signing checkpoints: <prefix>.key.pem (private) and <prefix>.pub.pem',
    )
    .argument('<prefix>', 'path and name of the two files')
    .addHelpText(
      'after',
      `\nExample:\n  $ ${c.leash} keygen leash-signing\n  $ LEASH_SIGNING_KEY=leash-signing.key.pem ${c.leash} run release.plan.yaml\n  $ ${c.leash} verify --public-key leash-signing.pub.pem`,
    )
    .action((prefix: string) => {
      const base = resolve(io.cwd, prefix);
      const files = [`${base}.key.pem`, `${base}.pub.pem`];
      const taken = files.filter((f) => existsSync(f));
      if (taken.length > 0)
        throw new GuardrailError('USAGE', `${taken.join(' and ')} exists already: choose another prefix`);
      const { privateKey, publicKey } = generateKeyPairSync('ed25519');
      // The private key is readable by its owner alone.
      writeFileSync(files[0] as string, privateKey.export({ type: 'pkcs8', format: 'pem' }), {
        mode: 0o600,
        flag: 'wx',
      });
      writeFileSync(files[1] as string, publicKey.export({ type: 'spki', format: 'pem' }), { flag: 'wx' });
      print(`wrote ${base}.key.pem (keep it secret) and ${base}.pub.pem`);
      // What an auditor compares with the key a bundle's verify.mjs prints.
      print(`public key fingerprint (SHA-256): ${keyFingerprint(publicKey)}`);
    });
}
