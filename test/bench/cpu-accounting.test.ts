/** The email bench's CPU accounting: what it reads from /proc and how it sums rounds. */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';

import { CpuTally, cpuMark, pidSource, processTreeSource, selfSource } from './cpu-accounting';

/** A node process that burns about `ms` of CPU (optionally in a child of its own), then waits for stdin. */
function burner(ms: number, inChild: boolean): ChildProcess {
  const burn = `const end = process.cpuUsage().user / 1000 + ${ms}; while (process.cpuUsage().user / 1000 < end);`;
  const script = inChild
    ? `const c = require('node:child_process').spawnSync(process.execPath, ['-e', ${JSON.stringify(burn)}]);
       process.stdout.write('done\\n'); process.stdin.resume();`
    : `${burn} process.stdout.write('done\\n'); process.stdin.resume();`;
  return spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
}

async function finished(child: ChildProcess): Promise<void> {
  await once(child.stdout!, 'data');
}

describe('cpu accounting', () => {
  const children: ChildProcess[] = [];
  afterAll(() => {
    for (const c of children) c.kill('SIGKILL');
  });

  it("reads another process's CPU from /proc, and a reaped child's through its parent's tree", async () => {
    const direct = burner(300, false);
    const parent = burner(300, true);
    children.push(direct, parent);
    const mark = cpuMark([pidSource('direct', direct.pid), processTreeSource('tree', parent.pid)]);
    await Promise.all([finished(direct), finished(parent)]);
    const spent = mark.spent();
    // Whatever the load, 300 ms of user CPU was spent after the mark in each (tick resolution 10 ms;
    // the mark may come a little after the start).
    expect(spent.direct).toBeGreaterThanOrEqual(150);
    // The child burned it and exited; the parent reaped it, so it is in the parent's cutime.
    expect(spent.tree).toBeGreaterThanOrEqual(150);
  });

  it('leaves out a process it cannot read (gone, or never started)', async () => {
    const gone = spawn(process.execPath, ['-e', '0']);
    await once(gone, 'exit');
    const mark = cpuMark([pidSource('gone', gone.pid), pidSource('none', undefined), selfSource()]);
    const spent = mark.spent();
    expect(Object.keys(spent)).toEqual(['bench']);
    expect(spent.bench).toBeGreaterThanOrEqual(0);
  });

  it('sums rounds per side and divides by the units of work', () => {
    const tally = new CpuTally();
    tally.add('service', 1000, { bench: 500, notification: 2000 });
    tally.add('service', 1000, { bench: 700, notification: 1800 });
    tally.add('direct', 500, { bench: 600 });
    expect(tally.perUnit()).toEqual({
      service: { bench: 0.6, notification: 1.9, total: 2.5 },
      direct: { bench: 1.2, total: 1.2 },
    });
    expect(tally.format('email')).toEqual([
      'service: bench 0.600 + notification 1.900 = 2.500 CPU-ms/email',
      'direct: bench 1.200 = 1.200 CPU-ms/email',
    ]);
    // direct costs 1.2 per email against the service's 2.5: the service could reach 0.48 of it.
    expect(tally.cpuRatio('service', 'direct')).toBeCloseTo(0.48, 10);
    expect(tally.formatCpuRatio('service', 'direct')).toEqual([
      "CPU ratio (direct CPU-ms per unit / service's, all processes): 0.48",
    ]);
    expect(tally.cpuRatio('service', 'absent')).toBeUndefined();
    expect(tally.formatCpuRatio('absent', 'direct')).toEqual([]);
  });
});
