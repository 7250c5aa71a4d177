/**
 * Preload (`node --require`) that CPU-profiles a benchmark's service process: node refuses
 * `--cpu-prof` in NODE_OPTIONS, which is the only way into a process the bench starts. Writes
 * `<BENCH_CPU_PROFILE_DIR>/<pid>.cpuprofile` (open it in Chrome DevTools or speedscope) when the
 * process exits, or at SIGUSR2 (for a process the bench then kills: the durable-enqueue row).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';

const dir = process.env.BENCH_CPU_PROFILE_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 200 });
  session.post('Profiler.start');
  let written = false;
  const write = (): void => {
    if (written) return;
    written = true;
    session.post('Profiler.stop', (err, result) => {
      if (err) return;
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    });
  };
  // An in-thread inspector session answers synchronously, so this works from the 'exit' event.
  process.on('exit', write);
  process.on('SIGUSR2', write);
}
