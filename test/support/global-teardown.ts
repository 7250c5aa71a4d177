export default async function globalTeardown(): Promise<void> {
  const cluster = (globalThis as { __svcCluster?: { stop(): void } }).__svcCluster;
  cluster?.stop();
}
