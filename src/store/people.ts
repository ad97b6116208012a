// What a store keeps of the people who decide: principals, their personal tokens (as hashes only), and
// the identity, rule and votes an approval carries. The rules about them live in `identity/`.

/** A person (or a service account) known to the store, who may sign in and decide approvals. */
export interface Principal {
  /** A handle: lower-case letters, digits, `.`, `_`, `-` and `@`, 1 to 128 characters (`ann`, `ann@example.com`). */
  readonly id: string;
  /** The name shown to people. */
  readonly name: string;
  /** Role names, sorted, without repeats (`release`, `finance`). */
  readonly roles: readonly string[];
  /** An e-mail address an OpenID Connect sign-in may map to this principal. */
  readonly email?: string;
  readonly createdAt: string;
  /** Set when the principal was revoked: it can no longer sign in or decide, and its tokens are refused. */
  readonly revokedAt?: string;
}

/** A personal token as the store keeps it: never the token, only its SHA-256. */
export interface PersonalToken {
  /** A short public id, shown in listings and used to revoke it (`tok_…`). */
  readonly id: string;
  readonly principalId: string;
  /** SHA-256 (hex) of the whole token string. */
  readonly hash: string;
  /** What it is for, as its owner named it. */
  readonly label?: string;
  readonly createdAt: string;
  readonly expiresAt?: string;
  readonly revokedAt?: string;
}

/**
 * Who decided, as verified by whatever signed them in:
 * - `token`: a personal token (`subject` is the principal's id);
 * - `oidc`: an OpenID Connect sign-in (`subject` is the ID token's `sub`, `issuer` its `iss`);
 * - `operator`: a name typed by whoever runs leash when the store has no principals (one operator);
 * - `elicitation`: an MCP client's user answering a form, not a verified person;
 * - `system`: leash itself (an approval that expired undecided).
 */
export interface DeciderIdentity {
  readonly kind: 'token' | 'oidc' | 'operator' | 'elicitation' | 'system';
  readonly subject: string;
  /** The name shown to people. */
  readonly name: string;
  readonly issuer?: string;
  /** The principal it maps to, when it maps to one. */
  readonly principal?: string;
  /** The roles it held when it decided. */
  readonly roles?: readonly string[];
}

/** The rule an approval was opened under, as it stood then: later policy changes do not move it. */
export interface ApprovalRule {
  /** The policy key it came from: an operation, a tool name or `*`. */
  readonly name: string;
  /** Who may approve: `role:NAME`, `user:ID` or `*` (anyone allowed to decide). */
  readonly approvers: readonly string[];
  /** How many distinct people must approve. */
  readonly quorum: number;
  /** Whether the run's requester may approve it. */
  readonly selfApproval: boolean;
  /** What an undecided approval becomes when it expires. */
  readonly onTimeout: 'deny';
  /** Whether an MCP client's user, answering an elicitation form, may approve it. */
  readonly elicitation: 'allow' | 'deny';
}

/** One person's approval towards a quorum. */
export interface ApprovalVote {
  readonly by: DeciderIdentity;
  readonly at: string;
  readonly reason?: string;
}
