/**
 * The monitor keeps no database: its `database` section is accepted (older files still load) but not
 * read, and a start with a database URL says so in the log instead of pretending to use it.
 */
import { startMonitorApp } from '../support/monitor-app';
import { capturingLogger } from '../shared/rpc/harness';

describe('the monitor database section', () => {
  it('a database URL is accepted and named as unread in a warning, never with its password', async () => {
    const { logger, lines } = capturingLogger();
    const m = await startMonitorApp(
      { database: { url: 'postgres://svc:hunter2-secret@db.example:5432/monitor' } },
      logger,
    );
    try {
      const warning = lines().find((l) => String(l.msg).includes('monitor.database is not read'));
      expect(warning).toBeDefined();
      expect(JSON.stringify(lines())).not.toContain('hunter2-secret');
    } finally {
      await m.close();
    }
  });

  it('without a URL nothing is said', async () => {
    const { logger, lines } = capturingLogger();
    const m = await startMonitorApp({}, logger);
    try {
      expect(lines().some((l) => String(l.msg).includes('monitor.database'))).toBe(false);
    } finally {
      await m.close();
    }
  });
});
