// leash/testing: the contract every GuardrailStore must keep, to run with any test runner.
import { basics } from './contract/basics.js';
import { update } from './contract/update.js';
import { approvals } from './contract/approvals.js';
import { mutations } from './contract/mutations.js';
import { auditLog } from './contract/auditLog.js';
import { severalEntries } from './contract/severalEntries.js';
import { entriesReadBack } from './contract/entriesReadBack.js';
import { concurrency } from './contract/concurrency.js';
import { onCommit } from './contract/onCommit.js';
import { checkpoints } from './contract/checkpoints.js';
import { documents } from './contract/documents.js';
import { close } from './contract/close.js';
import { caps } from './contract/caps.js';
import { approvalReview } from './contract/approvalReview.js';
import { people } from './contract/people.js';
import { notifications } from './contract/notifications.js';
import type { GuardrailStore } from '../store/GuardrailStore.js';
import type { StoreContractOptions, TestFunctions } from './contract/context.js';

export type { Assertion, StoreContractOptions, TestFunctions } from './contract/context.js';

/**
 * Registers the behaviour every GuardrailStore must have as tests of the runner whose functions
 * `test` holds: a store written for another database passes it before it can stand in for leash's own.
 *
 * @example
 * import { afterEach, beforeEach, describe, expect, it } from 'vitest';
 * import { runStoreContract } from 'leash/testing';
 *
 * runStoreContract('MyStore', {
 *   test: { describe, it, expect, beforeEach, afterEach },
 *   newStore: () => new MyStore(),
 * });
 */
export function runStoreContract(
  name: string,
  options: StoreContractOptions & { readonly test: TestFunctions },
): void {
  const { test } = options;
  test.describe(`GuardrailStore contract: ${name}`, () => {
    const c = {
      test,
      options,
      eachStore(set: (opened: GuardrailStore) => void): void {
        let current: GuardrailStore | undefined;
        test.beforeEach(async () => {
          current = undefined; // a store that fails to open leaves none to close
          current = await options.newStore();
          set(current);
        });
        test.afterEach(async () => {
          await current?.close();
        });
      },
    };
    basics(c);
    update(c);
    approvals(c);
    mutations(c);
    auditLog(c);
    severalEntries(c);
    entriesReadBack(c);
    concurrency(c);
    onCommit(c);
    checkpoints(c);
    documents(c);
    caps(c);
    approvalReview(c);
    people(c);
    notifications(c);
    close(c);
  });
}
