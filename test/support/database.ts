/**
 * Per-test-file databases on the run's PostgreSQL server, so test files never see each other's rows.
 */
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

/** The server URL the global setup exported; throws (never skips) when there is none. */
export function serverUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) throw new Error('TEST_DATABASE_URL is not set: the jest global setup did not start PostgreSQL');
  return url;
}

/** Creates a fresh, empty database and returns its URL and a function that drops it. */
export async function createTestDatabase(prefix = 't'): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: serverUrl() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl());
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new Client({ connectionString: serverUrl() });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}
