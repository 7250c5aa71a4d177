/**
 * The email bench's rows on a throwaway cluster with pg_stat_statements (planning tracked too), then
 * the statements that took the most time: where PostgreSQL's share of an email or an acknowledged
 * call goes (issue 30). Not part of `npm run bench`; figures are for reading, not for targets.
 *
 *   npm run build && EMAIL_BENCH_ROWS=enqueue node dist/test/bench/email-statements.js
 *
 * EMAIL_BENCH_ROWS (default `enqueue`) and EMAIL_BENCH_CPU_PROFILE work as in ./email.bench.ts.
 */
import { Client } from 'pg';

import { startCluster } from '../support/postgres-cluster';
import { runEmailBench } from './email.bench';

async function main(): Promise<void> {
  const cluster = await startCluster({
    settings: {
      shared_preload_libraries: 'pg_stat_statements',
      'pg_stat_statements.track': 'all',
      'pg_stat_statements.track_planning': 'on',
    },
  });
  try {
    const admin = new Client({ connectionString: cluster.url });
    await admin.connect();
    try {
      await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
      process.env.EMAIL_BENCH_ROWS ??= 'enqueue';
      await runEmailBench(cluster.url);
      const { rows } = await admin.query(
        `SELECT calls, rows, round(total_exec_time::numeric, 1) AS exec_ms,
           round(total_plan_time::numeric, 1) AS plan_ms,
           left(regexp_replace(query, '\\s+', ' ', 'g'), 120) AS query
         FROM pg_stat_statements
         WHERE query !~* '^(CREATE|ALTER|DROP|GRANT|COMMENT)'
         ORDER BY total_exec_time + total_plan_time DESC LIMIT 20`,
      );
      console.table(rows);
    } finally {
      await admin.end();
    }
  } finally {
    cluster.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
