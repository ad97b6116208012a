// Who a request to `leash mcp --listen` comes from, and whom its session runs for. A store without
// people: anyone with the listener's shared token. A store with people: the principal of the personal
// token the request carries, checked on every request, so that a token or a person revoked is refused
// from the next request on; the session is theirs, its plan labelled `user=<principal id>`.
import { bearerToken, secretsEqual } from '../dashboard/security.js';
import { errorTail, GuardrailValidationError, isGuardrailError } from '../errors.js';
import type { AutonomyGuardrailService } from '../service/AutonomyGuardrailService.js';

/** The codes of a personal token refused by the service's `authenticate`. */
const REFUSED_TOKEN = new Set(['TOKEN_INVALID', 'TOKEN_REVOKED', 'TOKEN_EXPIRED', 'PRINCIPAL_REVOKED']);

/** A request let in: with a personal token, its principal's id. */
export interface Caller {
  readonly principal?: string;
}

/** A request refused: 401 with the `WWW-Authenticate` header that answers it, or 500. */
export interface Refusal {
  readonly status: 401 | 500;
  readonly message: string;
  readonly challenge?: string;
}

const REALM = 'Bearer realm="leash mcp"';

/**
 * The caller of a request whose `Authorization` header is `header`, or why it is refused; the token is
 * never repeated in the answer. A store that cannot be read refuses it with 500, and the reason goes to
 * `log`, not to a client nobody knows yet.
 */
export async function callerOf(
  service: AutonomyGuardrailService,
  sharedToken: string,
  header: string | undefined,
  log: (line: string) => void,
): Promise<Caller | Refusal> {
  try {
    return await checkedCaller(service, sharedToken, header);
  } catch (error) {
    log(`leash mcp: the token of a request could not be checked: ${errorTail(error)}`);
    return { status: 500, message: 'Internal Server Error: the token could not be checked' };
  }
}

async function checkedCaller(
  service: AutonomyGuardrailService,
  sharedToken: string,
  header: string | undefined,
): Promise<Caller | Refusal> {
  const bearer = bearerToken(header);
  if (!(await service.hasPrincipals())) {
    if (bearer !== undefined && secretsEqual(bearer, sharedToken)) return {};
    return {
      status: 401,
      message: 'Unauthorized: send the token as "Authorization: Bearer <token>"',
      challenge: REALM,
    };
  }
  if (bearer === undefined) {
    return {
      status: 401,
      message:
        'Unauthorized: this leash knows its users: send your personal token (leash tokens create) as "Authorization: Bearer <token>"',
      challenge: REALM,
    };
  }
  try {
    const { principal } = await service.authenticate(bearer);
    if (principal !== undefined) return { principal };
  } catch (error) {
    if (!isGuardrailError(error) || !REFUSED_TOKEN.has(error.code)) throw error;
    // The service's message names the token's id at most, never the token.
    return {
      status: 401,
      message: `Unauthorized: ${error.message}`,
      challenge: `${REALM}, error="invalid_token"`,
    };
  }
  // A token's identity always names its principal; one that did not would belong to nobody.
  const message = 'Unauthorized: this token names no user';
  return { status: 401, message, challenge: `${REALM}, error="invalid_token"` };
}

/** Whether `callerOf` refused the request. */
export function isRefusal(value: Caller | Refusal): value is Refusal {
  return 'status' in value;
}

/**
 * Refuses a listener's `user` label once the store knows people: each session's comes from its token.
 * @throws GuardrailValidationError naming `labels`
 */
export async function checkListenerLabels(
  service: AutonomyGuardrailService,
  labels: Readonly<Record<string, string>> | undefined,
): Promise<void> {
  if (labels?.['user'] !== undefined && (await service.hasPrincipals())) {
    throw new GuardrailValidationError(
      'labels',
      'labels.user is set for each session from its personal token once the store knows people: leave it out',
    );
  }
}

/**
 * The labels of a session `caller` starts, as an option of `runMcpSession`: a person's session runs for them (`user=<principal id>`),
 * so that their spend caps apply and they are who asked for its approvals.
 */
export function sessionLabels(
  labels: Readonly<Record<string, string>> | undefined,
  caller: Caller,
): { labels?: Readonly<Record<string, string>> } {
  if (caller.principal === undefined) return labels === undefined ? {} : { labels };
  return { labels: { ...labels, user: caller.principal } };
}
