// What a GuardrailStore contract case is given: the test runner's functions and the store under test.
import type { CheckpointOptions } from '../../store/checkpoints.js';
import type { GuardrailStore } from '../../store/GuardrailStore.js';

/** The matchers the contract asserts with, as vitest's and jest's `expect` give them. */
export interface Assertion {
  toBe(expected: unknown): void;
  toEqual(expected: unknown): void;
  toStrictEqual(expected: unknown): void;
  toMatchObject(expected: object): void;
  toHaveLength(length: number): void;
  toBeNull(): void;
  toBeUndefined(): void;
  readonly rejects: {
    toBe(expected: unknown): Promise<void>;
    toBeInstanceOf(expected: abstract new (...args: never[]) => unknown): Promise<void>;
    toMatchObject(expected: object): Promise<void>;
    toThrow(expected?: string | RegExp): Promise<void>;
  };
}

/** A test runner's functions: vitest's, jest's or `node:test` with an `expect` that has the matchers. */
export interface TestFunctions {
  describe(name: string, body: () => void): void;
  it(name: string, body: () => Promise<void> | void): void;
  beforeEach(hook: () => Promise<void> | void): void;
  afterEach(hook: () => Promise<void> | void): void;
  expect(actual: unknown): Assertion;
}

export interface StoreContractOptions {
  /**
   * A new, empty, open store, made with `options` when given (checkpoint tests pass `checkpoints`).
   * Called once per test; the suite closes it afterwards.
   */
  newStore: (options?: { checkpoints?: CheckpointOptions }) => GuardrailStore | Promise<GuardrailStore>;
  /**
   * Writes `text` into column `column` of the stored audit entry `seq` of plan `planId`, past the store, as
   * damage to a database would. Given by the stores that keep rows; the cases about rows that cannot be
   * read back run only with it.
   */
  setEntryColumn?: (
    store: GuardrailStore,
    planId: string,
    seq: number,
    column: 'event_type' | 'details',
    text: string,
  ) => Promise<void>;
}

/** What each area of the contract is handed. */
export interface ContractContext {
  readonly test: TestFunctions;
  readonly options: StoreContractOptions;
  /** Opens a new store before each case of the area (handed to `set`) and closes it after. */
  eachStore(set: (store: GuardrailStore) => void): void;
}
