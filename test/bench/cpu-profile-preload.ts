/**
 * Preload (`node --require`) that CPU-profiles a benchmark's service process: node refuses
 * `--cpu-prof` in NODE_OPTIONS, which is the only way into a process the bench starts. Writes
 * `<BENCH_CPU_PROFILE_DIR>/<pid>.cpuprofile` (open it in Chrome DevTools or speedscope) when the
 * process exits.
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
  // An in-thread inspector session answers synchronously, so this works from the 'exit' event.
  process.on('exit', () => {
    session.post('Profiler.stop', (err, result) => {
      if (err) return;
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    });
  });
}
