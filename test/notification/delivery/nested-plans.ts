/**
 * The plans PostgreSQL actually ran for the statements inside a PL/pgSQL function (which EXPLAIN of
 * the call cannot show), read from auto_explain: loaded into `client`'s session, nested statements,
 * ANALYZE and BUFFERS, JSON, sent to the client as NOTICEs. `run` is called inside a transaction that
 * is rolled back. Real PostgreSQL only (PGlite has no auto_explain).
 */
import type { Client } from 'pg';

export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Loops'?: number;
  'Actual Rows'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
}

export interface NestedPlan {
  query: string;
  plan: PlanNode;
}

/** Every node of `plan`, itself first. */
export function planNodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(planNodes)];
}

/** Runs `run` (rolled back) and returns the plans of the statements it ran, nested ones included. */
export async function nestedPlans<T>(
  client: Client,
  run: () => Promise<T>,
): Promise<{ result: T; plans: NestedPlan[] }> {
  const plans: NestedPlan[] = [];
  const listener = (notice: { message?: string }) => {
    const text = notice.message ?? '';
    const at = text.indexOf('plan:');
    if (!text.startsWith('duration:') || at < 0) return;
    const explained = JSON.parse(text.slice(at + 'plan:'.length)) as { 'Query Text': string; Plan: PlanNode };
    plans.push({ query: explained['Query Text'], plan: explained.Plan });
  };
  await client.query('BEGIN');
  try {
    await client.query(`LOAD 'auto_explain'`);
    for (const setting of [
      'log_min_duration = 0',
      'log_analyze = on',
      'log_buffers = on',
      'log_nested_statements = on',
      `log_format = 'json'`,
      `log_level = 'notice'`,
    ]) {
      await client.query(`SET LOCAL auto_explain.${setting}`);
    }
    client.on('notice', listener);
    const result = await run();
    return { result, plans };
  } finally {
    client.removeListener('notice', listener);
    await client.query('ROLLBACK');
  }
}
