import { isGuardrailError } from '../errors.js';
import { formatIso } from '../iso.js';
import type { AutonomyGuardrailService } from '../service/AutonomyGuardrailService.js';
import type { PlanDocument } from '../store/GuardrailStore.js';

// What an MCP session keeps of itself in its plan's document, so that `leash status` and the dashboard
// show it as any plan: running (phase `execute`) while it lasts, then `completed` with when it ended and
// the steps it took, its wall clock stopped there. Nothing of the upstream's command is kept: its
// arguments may hold secrets.

/** The `format` of a session's document body. */
export const SESSION_FORMAT = 'leash.mcp';
const SESSION_VERSION = 1;

/** What a session's document says of it. */
export interface SessionRecord {
  readonly startedAt: string;
  /** Null while the session lasts (or when its process was killed). */
  readonly endedAt: string | null;
  /** The plan's steps when the session ended; null before. */
  readonly steps: number | null;
}

/** The session record of a document, or null for a document another program saved (a runner's plan). */
export function sessionRecordOf(doc: PlanDocument | null): SessionRecord | null {
  const b = doc?.body;
  if (b?.['format'] !== SESSION_FORMAT) return null;
  const text = (v: unknown) => (typeof v === 'string' ? v : null);
  return {
    startedAt: text(b['started_at']) ?? '',
    endedAt: text(b['ended_at']),
    steps: Number.isSafeInteger(b['steps']) ? (b['steps'] as number) : null,
  };
}

/**
 * Saves that the session of `planId` runs; resolves with the revision saved, or null when the plan's
 * document is another program's (left as it is) or was saved by another process at the same moment.
 */
export async function recordSessionStart(
  service: AutonomyGuardrailService,
  planId: string,
): Promise<number | null> {
  const { store, clock } = service;
  const doc = await store.getPlanDocument(planId);
  if (doc !== null && sessionRecordOf(doc) === null) return null;
  const now = formatIso(clock.now());
  const body = { format: SESSION_FORMAT, version: SESSION_VERSION, started_at: now };
  return saved(
    store.savePlanDocument(
      { planId, phase: 'execute', body, updatedAt: now },
      { expectedRevision: doc?.revision ?? null },
    ),
  );
}

/**
 * Saves the end of the session whose start was saved as `revision`: phase `completed`, when, and the
 * plan's steps. Left undone when another session of the plan saved its own start since.
 */
export async function recordSessionEnd(
  service: AutonomyGuardrailService,
  planId: string,
  revision: number,
): Promise<void> {
  const { store, clock } = service;
  const [doc, guardrails] = await Promise.all([store.getPlanDocument(planId), service.getGuardrails(planId)]);
  if (doc === null || doc.revision !== revision) return;
  const now = formatIso(clock.now());
  const body = { ...doc.body, ended_at: now, steps: guardrails?.stepCount ?? 0 };
  await saved(
    store.savePlanDocument(
      { planId, phase: 'completed', body, updatedAt: now },
      { expectedRevision: revision },
    ),
  );
}

/** The revision of a save, or null when another process saved first. */
async function saved(save: Promise<PlanDocument>): Promise<number | null> {
  try {
    return (await save).revision;
  } catch (error) {
    if (isGuardrailError(error) && error.code === 'PLAN_DOCUMENT_CONFLICT') return null;
    throw error;
  }
}
