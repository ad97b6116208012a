import type { AutonomyGuardrails } from '../../guardrails/AutonomyGuardrails.js';
import type { SpendCap } from '../../guardrails/caps.js';
import { refKey, type CapRef, type CapWindowState } from '../../guardrails/capLedger.js';
import { capWindowsFor, CapSession, compareRefs, emptyCapView } from '../caps.js';
import type { CapView, CapWindowRecord, CapWrite } from '../GuardrailStore.js';

/** The spend caps of a {@link MemoryStore}: their definitions and windows, in this process's memory. */
export class MemoryCaps {
  /** By id; kept in id order (see {@link put}). */
  #caps: readonly SpendCap[] = [];
  readonly #windows = new Map<string, { ref: CapRef; state: CapWindowState }>();

  /** A session reading this store's windows, and the view of plan state `g` at `at` through it. */
  open(g: AutonomyGuardrails | null, at: number): { view: CapView } {
    const windows = capWindowsFor(this.#caps, g, at);
    if (windows.refs.length === 0) return { view: emptyCapView(at) };
    const session = new CapSession((ref) => this.#windows.get(refKey(ref))?.state);
    return { view: session.view(windows, at) };
  }

  /** Keeps what a change wrote. */
  commit(writes: readonly CapWrite[]): void {
    for (const { ref, state } of writes) this.#windows.set(refKey(ref), { ref, state });
  }

  put(caps: readonly SpendCap[]): void {
    const byId = new Map(this.#caps.map((c) => [c.id, c]));
    for (const cap of caps) byId.set(cap.id, cap);
    this.#caps = [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  delete(id: string): boolean {
    const before = this.#caps.length;
    this.#caps = this.#caps.filter((c) => c.id !== id);
    for (const [key, w] of this.#windows) if (w.ref.cap === id) this.#windows.delete(key);
    return this.#caps.length < before;
  }

  list(): SpendCap[] {
    return [...this.#caps];
  }

  windows(capId: string | undefined): CapWindowRecord[] {
    const out: CapWindowRecord[] = [];
    for (const { ref, state } of this.#windows.values()) {
      if (capId === undefined || ref.cap === capId) out.push({ ...ref, state });
    }
    return out.sort(compareRefs);
  }
}
