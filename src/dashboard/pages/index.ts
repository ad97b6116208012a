// The dashboard's pages, one module each.

export { messagePage, type Flash, type PageContext } from './context.js';
export { planPage, plansPage, spendPoints, timelineOf } from './plans.js';
export {
  AUDIT_RESULTS,
  AUDIT_ROWS,
  auditPage,
  isAuditResult,
  type AuditFilter,
  type AuditResult,
} from './audit.js';
export { APPROVAL_FILTERS, approvalsPage } from './approvals.js';
export {
  budgetsPage,
  capsOfPlan,
  capStandings,
  projectedAtReset,
  readCapStandings,
  type CapStanding,
  type CapUse,
  type PlanCap,
} from './budgets.js';
