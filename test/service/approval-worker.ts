/**
 * One OS process of the approval process tests: it opens a store of its own on the shared database and,
 * on each "go" from the parent, first approves every approval of the job as its person, then uses every
 * grant, reporting what each call answered.
 *
 * Argument: the job, as JSON ({@link ApprovalJob}).
 */
import { AutonomyGuardrailService, isGuardrailError } from '../../src/index.js';
import { openStore, type StoreTarget } from '../caps/stores.js';
import { toParent } from '../support/processes.js';

export interface ApprovalJob {
  readonly target: StoreTarget;
  /** The principal this process approves as. */
  readonly person: string;
  readonly approvals: readonly {
    readonly id: string;
    readonly planId: string;
    readonly decisionId: string;
  }[];
  readonly operation: string;
}

export type ApprovalWorkerMessage =
  | { readonly type: 'ready' }
  /** Per approval, the status its approval answered with, or the code it was refused with. */
  | { readonly type: 'voted'; readonly outcomes: readonly string[] }
  /** Per approval, the outcome of using its grant. */
  | { readonly type: 'used'; readonly outcomes: readonly string[] }
  | { readonly type: 'error'; readonly message: string };

const go = () => new Promise((resolve) => process.once('message', resolve));

async function run(job: ApprovalJob): Promise<void> {
  const store = await openStore(job.target);
  await store.migrate(); // done by the parent already: here it checks the schema version and connects
  const service = new AutonomyGuardrailService({ store });
  const identity = {
    kind: 'token',
    subject: `tok_${job.person}`,
    name: job.person,
    principal: job.person,
  } as const;
  let next = go();
  await toParent({ type: 'ready' } satisfies ApprovalWorkerMessage);
  await next;
  next = go();
  const voted = await Promise.all(
    job.approvals.map((a) =>
      service.approve(a.id, { by: job.person, identity }).then(
        (approval) => approval.status as string,
        (error: unknown) => (isGuardrailError(error) ? error.code : String(error)),
      ),
    ),
  );
  await toParent({ type: 'voted', outcomes: voted } satisfies ApprovalWorkerMessage);
  await next;
  const used = await Promise.all(
    job.approvals.map(async (a) => {
      const use = { decisionId: a.decisionId, operation: job.operation, input: { n: a.decisionId } };
      return (await service.useGrant(a.planId, a.id, use)).outcome as string;
    }),
  );
  await store.close();
  await toParent({ type: 'used', outcomes: used } satisfies ApprovalWorkerMessage);
  process.disconnect();
}

run(JSON.parse(process.argv[2] ?? '{}') as ApprovalJob).catch(async (error: unknown) => {
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  await toParent({ type: 'error', message } satisfies ApprovalWorkerMessage).catch(() => undefined);
  process.exitCode = 1;
  process.disconnect();
});
