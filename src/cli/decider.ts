// Who decides with `leash approve` and `leash deny`: the principal of a personal token (--token, or
// LEASH_TOKEN) when the store has principals; a name given with --by when it has none.
import { GuardrailError } from '../errors.js';
import type { AutonomyGuardrailService } from '../service/AutonomyGuardrailService.js';
import type { DeciderIdentity } from '../store/people.js';

/** The environment variable a personal token may come from instead of --token. */
export const TOKEN_ENV = 'LEASH_TOKEN';

/** Who decides: `by` is recorded as the decider's name, `identity` when a token proved it. */
export interface Decider {
  readonly by: string;
  readonly identity?: DeciderIdentity;
}

/**
 * The decider of a command given `--by` and `--token`, with LEASH_TOKEN from `env`:
 * - `--token`: its principal (`--by` as well is refused: both name who decides);
 * - a store with principals: the principal of LEASH_TOKEN, required (a `--by` beside it is ignored, with
 *   a note, so that the `--by "$USER"` of the printed commands works for someone who set it);
 * - a store without: `--by`, required, as before there were principals (LEASH_TOKEN is not read).
 * A token that is refused is named by why, never by the token.
 */
export async function deciderOf(
  service: AutonomyGuardrailService,
  given: { readonly by?: string; readonly token?: string },
  env: NodeJS.ProcessEnv,
  note: (text: string) => void,
): Promise<Decider> {
  if (given.token !== undefined) {
    if (given.by !== undefined) {
      throw new GuardrailError('USAGE', '--by and --token both name who decides: pass only one');
    }
    return authenticated(service, given.token);
  }
  if (await service.hasPrincipals()) {
    const token = env[TOKEN_ENV];
    if (token === undefined || token === '') {
      throw new GuardrailError(
        'USAGE',
        `this store has users, so a decision needs one's personal token: pass --token <token> or set ${TOKEN_ENV}`,
      );
    }
    if (given.by !== undefined) note(`--by is ignored: the personal token in ${TOKEN_ENV} names who decides`);
    return authenticated(service, token);
  }
  if (given.by === undefined) {
    throw new GuardrailError('USAGE', 'say who decides: --by <name>');
  }
  return { by: given.by };
}

async function authenticated(service: AutonomyGuardrailService, token: string): Promise<Decider> {
  const identity = await service.authenticate(token);
  return { by: identity.name, identity };
}
