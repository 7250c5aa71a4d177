/**
 * The inbound SMS log stores (channels/sms/inbound-log*.ts), memory and database (real PostgreSQL):
 * ids in order, one entry per provider id, the cap at and past its bound (the horizon moves), the body
 * cut at 1,600 code points with emoji, CJK and right-to-left text, control characters made storable,
 * retention (memory: a fake clock; database: the database's clock, rows aged by hand), erasure of a
 * sender's messages (the horizon stays), and concurrent appends on the database numbered gap-free.
 */
import type { Knex } from 'knex';
import { DatabaseInboundSmsLog } from '../../../../services/notification/channels/sms/inbound-log-database-store';
import { InMemoryInboundSmsLog } from '../../../../services/notification/channels/sms/inbound-log-memory-store';
import {
  MAX_INBOUND_SMS_BODY_CODE_POINTS,
  type InboundSmsLog,
  type NewInboundSms,
} from '../../../../services/notification/channels/sms/inbound-log';
import { InboundSmsRetention } from '../../../../services/notification/channels/sms/inbound-log-retention';
import { notificationMigrations } from '../../../../services/notification/migrations';
import { silentLogger } from '../../../../shared/logging/logger';
import { openDatabase } from '../../../../shared/storage/database';
import { runMigrations } from '../../../../shared/storage/migrations';
import { InProcessJobLease } from '../../../../shared/storage/periodic-job';
import { textLength } from '../../../../shared/text/cut';
import { createTestDatabase } from '../../../support/database';
import { epochClock, ManualClock } from '../../../support/manual-clock';

const HOUR = 3_600_000;
let knex: Knex;
let drop: () => Promise<void>;

beforeAll(async () => {
  const db = await createTestDatabase('inbound_sms_log');
  drop = db.drop;
  knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 6 }, silentLogger());
  await runMigrations(knex, notificationMigrations);
});

afterAll(async () => {
  await knex?.destroy();
  await drop?.();
});

/** A fresh database log: the tables emptied and the counter reset (one database for the file). */
async function freshDatabaseLog(maxMessages?: number): Promise<DatabaseInboundSmsLog> {
  await knex.raw('DELETE FROM inbound_sms');
  await knex.raw('UPDATE inbound_sms_state SET last_id = 0, purged_through = 0');
  return new DatabaseInboundSmsLog(knex, { maxMessages });
}

let sid = 0;
function sms(overrides: Partial<NewInboundSms> = {}): NewInboundSms {
  return {
    backend: 'twilio',
    providerId: `SM${String(++sid).padStart(32, '0')}`,
    from: '+15551230001',
    to: '+15550001111',
    body: 'ACK 4821',
    ...overrides,
  };
}

describe.each([
  // Numbered from 1, as the database store.
  [
    'InMemoryInboundSmsLog',
    async (max?: number) => new InMemoryInboundSmsLog({ maxMessages: max, clock: epochClock() }),
  ],
  ['DatabaseInboundSmsLog on PostgreSQL', freshDatabaseLog],
] as const)('%s', (_name, make: (max?: number) => Promise<InboundSmsLog>) => {
  it('gives each message the next id and reads them back after a cursor, oldest first', async () => {
    const log = await make();
    const a = await log.append(sms({ body: 'one' }));
    const b = await log.append(sms({ body: 'two' }));
    const c = await log.append(sms({ body: 'three' }));
    expect([a!.id, b!.id, c!.id]).toEqual([1, 2, 3]);
    expect(await log.latestId()).toBe(3);
    expect((await log.after(0, 10)).map((m) => m.body)).toEqual(['one', 'two', 'three']);
    expect((await log.after(1, 1)).map((m) => m.body)).toEqual(['two']);
    expect(await log.after(3, 10)).toEqual([]);
    expect(await log.after(0, 10)).toEqual([
      expect.objectContaining({ id: 1, backend: 'twilio', from: '+15551230001', to: '+15550001111' }),
      expect.anything(),
      expect.anything(),
    ]);
    expect((await log.after(0, 1))[0]!.receivedAt).toBeInstanceOf(Date);
  });

  it('when one provider id arrives twice on a backend, it is logged once; on another backend it is new', async () => {
    const log = await make();
    const first = sms();
    expect(await log.append(first)).not.toBeNull();
    expect(await log.append({ ...first, body: 'changed' })).toBeNull();
    expect(await log.append({ ...first, backend: 'twilio-eu' })).not.toBeNull();
    expect((await log.after(0, 10)).map((m) => [m.id, m.backend])).toEqual([
      [1, 'twilio'],
      [2, 'twilio-eu'],
    ]);
    // The duplicate took no id.
    expect(await log.latestId()).toBe(2);
  });

  it('keeps exactly max messages; one more pushes out the oldest and moves the horizon past it', async () => {
    const log = await make(3);
    for (let i = 1; i <= 3; i++) await log.append(sms({ body: `m${i}` }));
    expect((await log.after(0, 10)).map((m) => m.body)).toEqual(['m1', 'm2', 'm3']);
    expect(await log.horizon()).toBe(0);
    await log.append(sms({ body: 'm4' }));
    expect((await log.after(0, 10)).map((m) => m.body)).toEqual(['m2', 'm3', 'm4']);
    expect(await log.horizon()).toBe(1);
    await log.append(sms({ body: 'm5' }));
    await log.append(sms({ body: 'm6' }));
    expect((await log.after(0, 10)).map((m) => m.id)).toEqual([4, 5, 6]);
    expect(await log.horizon()).toBe(3);
  });

  it('cuts the body at 1,600 code points, never inside an emoji, and keeps CJK and right-to-left text whole', async () => {
    const log = await make();
    const exactly = '😀'.repeat(MAX_INBOUND_SMS_BODY_CODE_POINTS);
    const over = '日本'.repeat(MAX_INBOUND_SMS_BODY_CODE_POINTS / 2) + '😀';
    const emojiAtCut = 'a'.repeat(MAX_INBOUND_SMS_BODY_CODE_POINTS - 1) + '😀😀';
    const rtl = 'ACK ٤٨٢١ شكرا עברית';
    for (const body of [exactly, over, emojiAtCut, rtl]) await log.append(sms({ body }));
    const [a, b, c, d] = await log.after(0, 10);
    expect(a!.body).toBe(exactly);
    expect(textLength(b!.body, 'code_point')).toBe(MAX_INBOUND_SMS_BODY_CODE_POINTS);
    expect(b!.body).toBe('日本'.repeat(MAX_INBOUND_SMS_BODY_CODE_POINTS / 2));
    expect(c!.body).toBe('a'.repeat(MAX_INBOUND_SMS_BODY_CODE_POINTS - 1) + '😀');
    expect(c!.body).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
    expect(d!.body).toBe(rtl);
  });

  it('stores a body with NUL, other control characters and a lone surrogate (each becomes U+FFFD); tabs and line breaks stay', async () => {
    const log = await make();
    await log.append(sms({ body: 'ACK\u00001\u0007\ud83d\tline\r\nnext' }));
    const [m] = await log.after(0, 1);
    expect(m!.body).toBe('ACK\ufffd1\ufffd\ufffd\tline\r\nnext');
  });

  it("when a sender's messages are erased, only theirs go, and the horizon stays (the others are still read)", async () => {
    const log = await make();
    await log.append(sms({ from: '+15551230001', body: 'mine 1' }));
    await log.append(sms({ from: '+15559990000', body: 'other' }));
    await log.append(sms({ from: '+15551230002', body: 'mine 2' }));
    expect(await log.eraseSenders(['+15551230001', '+15551230002'])).toBe(2);
    expect((await log.after(0, 10)).map((m) => m.body)).toEqual(['other']);
    expect(await log.horizon()).toBe(0);
    expect(await log.eraseSenders([])).toBe(0);
    // The same provider id can come again after erasure only as a new message: nothing of it is kept.
    expect(JSON.stringify(await log.after(0, 10))).not.toContain('mine');
  });
});

describe('retention', () => {
  it('memory: a message younger than the retention stays; past it (fake clock) it goes and the horizon moves', async () => {
    const clock = new ManualClock();
    const log = new InMemoryInboundSmsLog({ clock });
    const retention = new InboundSmsRetention({
      log,
      retentionHours: 72,
      lease: new InProcessJobLease(),
      clock,
    });
    const old = await log.append(sms({ body: 'old' }));
    clock.advance(HOUR);
    await log.append(sms({ body: 'newer' }));
    clock.advance(71 * HOUR - 1);
    expect(await retention.purge()).toBe(0);
    clock.advance(2);
    expect(await retention.purge()).toBe(1);
    expect((await log.after(0, 10)).map((m) => m.body)).toEqual(['newer']);
    expect(await log.horizon()).toBe(old!.id);
    clock.advance(HOUR);
    expect(await retention.purge()).toBe(1);
    expect(log.size).toBe(0);
  });

  it('memory: the periodic job runs once per interval', async () => {
    const clock = new ManualClock();
    const log = new InMemoryInboundSmsLog({ clock });
    const retention = new InboundSmsRetention({
      log,
      retentionHours: 1,
      lease: new InProcessJobLease(),
      clock,
      intervalMs: 10 * 60_000,
    });
    await log.append(sms());
    clock.advance(2 * HOUR);
    expect(await retention.runOnce()).toBe(true);
    expect(log.size).toBe(0);
    await log.append(sms());
    clock.advance(5 * 60_000);
    expect(await retention.runOnce()).toBe(false);
    expect(log.size).toBe(1);
    clock.advance(2 * HOUR);
    expect(await retention.runOnce()).toBe(true);
    expect(log.size).toBe(0);
  });

  it('database: messages older than the retention by the database clock go in batches, a prefix of the ids', async () => {
    const log = await freshDatabaseLog();
    for (let i = 1; i <= 5; i++) await log.append(sms({ body: `m${i}` }));
    // Ids 1-3 are 73 hours old; 4 and 5 are fresh.
    await knex.raw(`UPDATE inbound_sms SET received_at = now() - interval '73 hours' WHERE id <= 3`);
    expect(await log.purgeExpired(72, 2)).toBe(3);
    expect((await log.after(0, 10)).map((m) => m.body)).toEqual(['m4', 'm5']);
    expect(await log.horizon()).toBe(3);
    expect(await log.purgeExpired(72, 2)).toBe(0);
    expect(await log.horizon()).toBe(3);
  });
});

describe('DatabaseInboundSmsLog under concurrent appends', () => {
  it('numbers 40 concurrent appends 1..40 with no gap, each readable after the one before', async () => {
    const log = await freshDatabaseLog();
    const seen: number[] = [];
    log.onAppended((id) => seen.push(id));
    const logged = await Promise.all(
      Array.from({ length: 40 }, (_, i) => log.append(sms({ body: `c${i}` }))),
    );
    expect(logged.map((m) => m!.id).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 40 }, (_, i) => i + 1),
    );
    expect((await log.after(0, 100)).map((m) => m.id)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(seen.sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
  });

  it('a duplicate under concurrency is logged once and takes no id', async () => {
    const log = await freshDatabaseLog();
    const one = sms();
    const answers = await Promise.all(Array.from({ length: 10 }, () => log.append(one)));
    expect(answers.filter((a) => a !== null)).toHaveLength(1);
    expect(await log.latestId()).toBe(1);
  });
});
