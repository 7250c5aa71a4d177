import { startCluster } from './postgres-cluster';

/** Starts one PostgreSQL cluster for the whole run unless the caller points us at a server. */
export default async function globalSetup(): Promise<void> {
  if (process.env.TEST_DATABASE_URL) return;
  const cluster = await startCluster();
  process.env.TEST_DATABASE_URL = cluster.url;
  (globalThis as { __svcCluster?: { stop(): void } }).__svcCluster = cluster;
}
