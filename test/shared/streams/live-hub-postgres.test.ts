/**
 * The one live-stream hub across replicas: two hubs on one real PostgreSQL, each with the LISTEN feed
 * its composition root would hand it. A commit on one replica reaches the other's watchers through
 * NOTIFY, read from the log (no event travels in the payload).
 */
import { Pool } from 'pg';
import { silentLogger } from '../../../shared/logging/logger';
import { LiveHub, type EventLog, type LiveFrame } from '../../../shared/streams/live-hub';
import { PgNotifyFeed } from '../../../shared/streams/notify-feed';
import { createTestDatabase } from '../../support/database';
import { waitFor } from '../../support/wait';
import { TEST_HUB_OPTIONS } from './support';

const CHANNEL = 'test_stream_events';

interface Row {
  seq: number;
  body: string;
}

/** A replica's view of one log table: append (with NOTIFY in the same statement) and the port. */
class TableLog implements EventLog<Row, null> {
  private readonly listeners = new Set<(channel: string, seq: number) => void>();

  constructor(private readonly pool: Pool) {}

  async append(channel: string, body: string): Promise<number> {
    const { rows } = await this.pool.query<{ seq: string }>(
      `WITH ev AS (
         INSERT INTO stream_events (channel, seq, body)
         SELECT $1, coalesce(max(seq), 0) + 1, $2 FROM stream_events WHERE channel = $1
         RETURNING channel, seq)
       SELECT ev.seq, pg_notify($3, json_build_object('channel', ev.channel, 'seq', ev.seq)::text) FROM ev`,
      [channel, body, CHANNEL],
    );
    const seq = Number(rows[0]!.seq);
    for (const listener of this.listeners) listener(channel, seq);
    return seq;
  }

  async latestSeq(channel: string): Promise<number> {
    const { rows } = await this.pool.query<{ seq: string | null }>(
      'SELECT max(seq) AS seq FROM stream_events WHERE channel = $1',
      [channel],
    );
    return Number(rows[0]!.seq ?? 0);
  }

  async readChannel(channel: string, after: number, limit: number): Promise<Row[]> {
    const { rows } = await this.pool.query<{ seq: string; body: string }>(
      'SELECT seq, body FROM stream_events WHERE channel = $1 AND seq > $2 ORDER BY seq LIMIT $3',
      [channel, after, limit],
    );
    return rows.map((r) => ({ seq: Number(r.seq), body: r.body }));
  }

  readWatch(channel: string, _watch: null, after: number, limit: number): Promise<Row[]> {
    return this.readChannel(channel, after, limit);
  }

  async horizon(): Promise<number> {
    return 0;
  }

  onAppended(listener: (channel: string, seq: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

let db: { url: string; drop(): Promise<void> };
const cleanup: (() => Promise<void> | void)[] = [];

async function replica(): Promise<{ log: TableLog; hub: LiveHub<Row, null> }> {
  const pool = new Pool({ connectionString: db.url, max: 2 });
  const feed = new PgNotifyFeed({ url: db.url, channels: [CHANNEL], logger: silentLogger() });
  await feed.start();
  const log = new TableLog(pool);
  const hub = new LiveHub(log, {
    ...TEST_HUB_OPTIONS,
    notifications: {
      feed,
      channel: CHANNEL,
      parse: (payload) => {
        const p = JSON.parse(payload) as { channel: string; seq: number };
        return { channel: p.channel, seq: p.seq };
      },
    },
  });
  hub.start();
  cleanup.push(
    () => hub.stop(),
    () => feed.stop(),
    () => pool.end(),
  );
  return { log, hub };
}

beforeAll(async () => {
  db = await createTestDatabase('livehub');
  const pool = new Pool({ connectionString: db.url, max: 1 });
  await pool.query(
    'CREATE TABLE stream_events (channel text, seq bigint, body text, PRIMARY KEY (channel, seq))',
  );
  await pool.end();
});

afterAll(async () => {
  for (const step of cleanup.reverse()) await step();
  await db?.drop();
});

describe('LiveHub across replicas on one PostgreSQL', () => {
  it('when one replica appends, a watcher on the other gets the events through NOTIFY, in order and once', async () => {
    const a = await replica();
    const b = await replica();
    await waitFor(() => a.hub.listening && b.hub.listening, 'both feeds to listen');
    await a.log.append('user-1', 'before');
    const it = b.hub.watch({ channel: 'user-1', watch: null, capKey: 'k' })[Symbol.asyncIterator]();
    const first = (await it.next()).value as LiveFrame<Row>;
    expect(first).toEqual({ type: 'live', seq: 1 });
    for (const body of ['one', 'двa', '🚀 起飞']) await a.log.append('user-1', body);
    await a.log.append('user-2', 'not watched here');
    const frames: LiveFrame<Row>[] = [];
    for (let i = 0; i < 3; i++) frames.push((await it.next()).value as LiveFrame<Row>);
    expect(frames.map((f) => (f.type === 'event' ? `${f.seq}:${f.event.body}` : f.type))).toEqual([
      '2:one',
      '3:двa',
      '4:🚀 起飞',
    ]);
    await it.return!();
  });
});
