// The GuardrailStore contract: close.
import type { GuardrailStore } from '../../store/GuardrailStore.js';
import { guardrails } from './fixtures.js';
import type { ContractContext } from './context.js';

export function close(c: ContractContext): void {
  const { describe, it, expect } = c.test;
  const { options } = c;
  describe('close', () => {
    // A store open beside the closed ones, as in every other area.
    c.eachStore(() => undefined);

    async function closedStore(): Promise<GuardrailStore> {
      const s = await options.newStore();
      await s.put('p', guardrails());
      await s.close();
      return s;
    }

    it('refuses get after close', async () => {
      await expect((await closedStore()).get('p')).rejects.toBeInstanceOf(Error);
    });

    it('refuses put after close', async () => {
      await expect((await closedStore()).put('p', guardrails())).rejects.toBeInstanceOf(Error);
    });

    it('refuses create after close', async () => {
      const s = await closedStore();
      if (!s.create) return;
      await expect(s.create('q', guardrails())).rejects.toBeInstanceOf(Error);
    });

    it('refuses update after close', async () => {
      const s = await closedStore();
      await expect(s.update('p', () => ({ result: null }))).rejects.toBeInstanceOf(Error);
    });

    it('refuses delete after close', async () => {
      await expect((await closedStore()).delete('p')).rejects.toBeInstanceOf(Error);
    });

    it('refuses getApproval after close', async () => {
      await expect((await closedStore()).getApproval('a1')).rejects.toBeInstanceOf(Error);
    });

    it('refuses listApprovals after close', async () => {
      await expect((await closedStore()).listApprovals()).rejects.toBeInstanceOf(Error);
    });

    it('refuses readAuditLog after close', async () => {
      await expect((await closedStore()).readAuditLog('p')).rejects.toBeInstanceOf(Error);
    });

    it('refuses listPlans after close', async () => {
      await expect((await closedStore()).listPlans()).rejects.toBeInstanceOf(Error);
    });
  });
}
