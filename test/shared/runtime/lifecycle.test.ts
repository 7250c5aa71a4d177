import { PassThrough } from 'node:stream';
import { createLogger } from '../../../shared/logging/logger';
import { ServiceLifecycle, type LifecyclePart } from '../../../shared/runtime/lifecycle';

/** A lifecycle whose log lines can be read back, and a journal of what ran in which order. */
function setup() {
  const out = new PassThrough();
  const lines: string[] = [];
  out.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean)));
  const lifecycle = new ServiceLifecycle(createLogger({ name: 'test', format: 'json', destination: out }));
  const journal: string[] = [];
  const part = (name: string, failStop = false): LifecyclePart => ({
    start: () => void journal.push(`start ${name}`),
    stop: () => {
      journal.push(`stop ${name}`);
      if (failStop) throw new Error(`${name} would not stop`);
    },
  });
  const server = {
    start: async () => {
      journal.push('start server');
      return { grpc: 1, http: 2 };
    },
    shutdown: async () => void journal.push('stop server'),
  };
  const pool = (name: string) => async () => {
    journal.push(`open ${name}`);
    return { close: async () => void journal.push(`close ${name}`) };
  };
  return { lifecycle, journal, part, server, pool, lines };
}

describe('ServiceLifecycle', () => {
  it('starts storage, areas, workers, server, observability, and stops in the reverse roles', async () => {
    const { lifecycle, journal, part, server, pool } = setup();
    await lifecycle.storage('database', pool('database'));
    await lifecycle.area('inbox', part('inbox'));
    await lifecycle.area('delivery', part('delivery'));
    lifecycle.exporter('observability', part('observability'));
    lifecycle.serve('server', server);
    lifecycle.worker('delivery-worker', part('worker'));

    expect(await lifecycle.start()).toEqual({ grpc: 1, http: 2 });
    await lifecycle.stop();

    expect(journal).toEqual([
      'open database',
      'start inbox',
      'start delivery',
      'start worker',
      'start server',
      'start observability',
      'stop server',
      'stop worker',
      'stop delivery',
      'stop inbox',
      'close database',
      'stop observability',
    ]);
  });

  it('when one part fails to stop, the rest still stop and the first failure is rethrown and logged', async () => {
    const { lifecycle, journal, part, server, pool, lines } = setup();
    await lifecycle.storage('database', pool('database'));
    await lifecycle.area('inbox', part('inbox', true));
    lifecycle.serve('server', server);
    await lifecycle.start();

    await expect(lifecycle.stop()).rejects.toThrow('inbox would not stop');
    expect(journal.slice(-3)).toEqual(['stop server', 'stop inbox', 'close database']);
    expect(lines.map((l) => JSON.parse(l) as { part?: string; msg: string })).toContainEqual(
      expect.objectContaining({ part: 'inbox', msg: 'stop failed; stopping the rest' }),
    );
  });

  it('when stopped before start (a failed build), it closes only what was opened', async () => {
    const { lifecycle, journal, part, server, pool } = setup();
    await lifecycle.storage('database', pool('database'));
    await lifecycle.area('inbox', part('inbox'));
    lifecycle.serve('server', server);
    lifecycle.worker('worker', part('worker'));
    await lifecycle.stop();
    expect(journal).toEqual(['open database', 'start inbox', 'stop inbox', 'close database']);
  });

  it('when stop is called twice, everything stops once, and nothing registers afterwards', async () => {
    const { lifecycle, journal, part, server } = setup();
    await lifecycle.area('inbox', part('inbox'));
    lifecycle.serve('server', server);
    await lifecycle.start();
    await Promise.all([lifecycle.stop(), lifecycle.stop()]);
    expect(journal.filter((j) => j.startsWith('stop'))).toEqual(['stop server', 'stop inbox']);
    await expect(lifecycle.area('late', part('late'))).rejects.toThrow('already stopped');
  });

  it('refuses to start without a server', async () => {
    const { lifecycle } = setup();
    await expect(lifecycle.start()).rejects.toThrow('no server registered');
  });
});
