/**
 * The `ACK <code>` consumer (services/monitor/oncall/inbound-sms.ts) against a scripted stream and a
 * fake PageAcknowledger: the parse rule (case, whitespace, NFKC full-width text, nothing else, the
 * code's length bound), the first connection starting live, resume after the last handled id, the
 * reconnect backoff after failures (no real waits), an acknowledgment that throws read again, reset;
 * the cursor stores in memory and on real PostgreSQL (never moving back).
 */
import type { Knex } from 'knex';
import {
  InboundSmsConsumer,
  MAX_ACK_CODE_LENGTH,
  parseAckCode,
  type InboundSmsSource,
  type InboundSmsStreamFrame,
} from '../../../services/monitor/oncall/inbound-sms';
import {
  DatabaseInboundSmsCursor,
  MemoryInboundSmsCursor,
} from '../../../services/monitor/oncall/inbound-sms-cursor';
import type { AckOutcome, PageAcknowledger } from '../../../services/monitor/oncall/ports';
import { monitorMigrations } from '../../../services/monitor/migrations';
import { silentLogger } from '../../../shared/logging/logger';
import { openDatabase } from '../../../shared/storage/database';
import { runMigrations } from '../../../shared/storage/migrations';
import { loadMonitorConfig } from '../../../services/monitor/config';
import { isSecretKey } from '../../../shared/config/redact';
import { createTestDatabase } from '../../support/database';
import { until, waitFor } from '../../support/wait';

describe('parseAckCode', () => {
  it.each([
    ['ACK 4821', '4821'],
    ['ack 4821', '4821'],
    ['Ack   4821', '4821'],
    ['  ACK 4821 \n', '4821'],
    ['ACK\t4821', '4821'],
    // Full-width letters and digits, the ideographic space.
    ['ＡＣＫ　４８２１', '4821'],
    ['ａｃｋ ４８２１', '4821'],
    ['ACK ab12', 'ab12'],
    [`\n ACK 4821${' '.repeat(100)}`, '4821'],
    [`ACK ${'9'.repeat(MAX_ACK_CODE_LENGTH)}`, '9'.repeat(MAX_ACK_CODE_LENGTH)],
  ])('%j is an acknowledgment with code %j', (body, code) => {
    expect(parseAckCode(body)).toBe(code);
  });

  it.each([
    'ACK',
    'ACK4821',
    'ACK 4821 thanks',
    'please ACK 4821',
    'ACK 48 21',
    'ACK 4821!',
    'ACK 4821 😀',
    'ACK ٤٨٢١', // Arabic-Indic digits are not folded by NFKC
    'ACK 日本',
    'NACK 4821',
    `ACK ${'9'.repeat(MAX_ACK_CODE_LENGTH + 1)}`,
    `ACK 4821 ${'x'.repeat(100)}`,
    '',
    'STOP',
  ])('%j is not an acknowledgment', (body) => {
    expect(parseAckCode(body)).toBeNull();
  });
});

/** A stream scripted per connection: its frames, then an end, a failure, or staying open. */
class ScriptedSource implements InboundSmsSource {
  readonly opened: string[] = [];
  readonly scripts: Array<{ frames: InboundSmsStreamFrame[]; then: 'end' | 'fail' | 'hang' }> = [];

  async *watchInboundSms(afterId: string, signal: AbortSignal): AsyncGenerator<InboundSmsStreamFrame> {
    this.opened.push(afterId);
    const script = this.scripts.shift() ?? { frames: [], then: 'hang' as const };
    for (const frame of script.frames) yield frame;
    if (script.then === 'fail') throw new Error('UNAVAILABLE');
    if (script.then === 'hang')
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  }
}

class FakeAcknowledger implements PageAcknowledger {
  readonly calls: Array<[string, string]> = [];
  failNext = 0;
  async acknowledgeByCode(code: string, from: string): Promise<AckOutcome> {
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('database unavailable');
    }
    this.calls.push([code, from]);
    return 'acknowledged';
  }
}

const msg = (id: number, body: string, from = '+15551230001'): InboundSmsStreamFrame => ({
  type: 'message',
  message: { id, backend: 'twilio', from, to: '+15550001111', body, receivedAt: new Date(0) },
});

describe('InboundSmsConsumer', () => {
  const consumers: InboundSmsConsumer[] = [];
  afterEach(async () => {
    for (const c of consumers.splice(0)) await c.stop();
  });

  function consumer(source: ScriptedSource, cursor = new MemoryInboundSmsCursor()) {
    const acks = new FakeAcknowledger();
    const waits: number[] = [];
    const c = new InboundSmsConsumer({
      source,
      cursor,
      acknowledger: acks,
      backoff: { baseMs: 100, maxMs: 800 },
      sleep: async (ms) => void waits.push(ms),
    });
    consumers.push(c);
    return { c, acks, waits, cursor };
  }

  it('the first connection starts live and keeps its id; ACK replies are acknowledged with the sender, others ignored', async () => {
    const source = new ScriptedSource();
    source.scripts.push({
      frames: [
        { type: 'live', id: 7 },
        msg(8, 'ACK 4821', '+15551230001'),
        msg(9, 'thanks, on it 😀'),
        msg(10, 'ＡＣＫ　５５'),
      ],
      then: 'hang',
    });
    const { c, acks, cursor } = consumer(source);
    c.start();
    await waitFor(() => c.handledCount === 3, 'three messages');
    expect(source.opened).toEqual(['']);
    expect(acks.calls).toEqual([
      ['4821', '+15551230001'],
      ['55', '+15551230001'],
    ]);
    await until(async () => (await cursor.load()) === 10, 'the cursor at the last message', 15_000);
  });

  it('when the stream fails, it reconnects after a growing backoff, after the last handled id, and sees nothing twice', async () => {
    const source = new ScriptedSource();
    source.scripts.push({ frames: [{ type: 'live', id: 0 }, msg(1, 'ACK 1')], then: 'fail' });
    source.scripts.push({ frames: [], then: 'fail' });
    source.scripts.push({ frames: [], then: 'fail' });
    // The server replays from the cursor; a frame at or below it is never handled again.
    source.scripts.push({ frames: [msg(1, 'ACK 1'), msg(2, 'ACK 2')], then: 'hang' });
    const { c, acks, waits } = consumer(source);
    c.start();
    await waitFor(() => acks.calls.length === 2, 'two acknowledgments');
    expect(source.opened).toEqual(['', '1', '1', '1']);
    expect(acks.calls.map(([code]) => code)).toEqual(['1', '2']);
    // A stream that carried a frame resets the count; empty failures double the wait, capped.
    expect(waits).toEqual([100, 200, 400]);
  });

  it('the reconnect wait is capped at its maximum', async () => {
    const source = new ScriptedSource();
    for (let i = 0; i < 6; i++) source.scripts.push({ frames: [], then: 'fail' });
    const { c, waits } = consumer(source);
    c.start();
    await waitFor(() => source.opened.length === 7, 'seven connections');
    expect(waits.slice(0, 6)).toEqual([100, 200, 400, 800, 800, 800]);
  });

  it('when an acknowledgment throws, the message is not passed: after the reconnect it is read and acknowledged again', async () => {
    const source = new ScriptedSource();
    source.scripts.push({ frames: [{ type: 'live', id: 3 }, msg(4, 'ACK 44')], then: 'hang' });
    source.scripts.push({ frames: [msg(4, 'ACK 44'), msg(5, 'ACK 55')], then: 'hang' });
    const { c, acks, cursor } = consumer(source);
    acks.failNext = 1;
    c.start();
    await waitFor(() => acks.calls.length === 2, 'both acknowledged');
    expect(source.opened).toEqual(['', '3']);
    expect(acks.calls.map(([code]) => code)).toEqual(['44', '55']);
    await until(async () => (await cursor.load()) === 5, 'the cursor at 5', 15_000);
  });

  it('a restart resumes after the kept id; a reset moves the cursor to where the stream stands', async () => {
    const cursor = new MemoryInboundSmsCursor();
    await cursor.save(20);
    const source = new ScriptedSource();
    source.scripts.push({ frames: [{ type: 'reset', id: 90 }, msg(91, 'ACK 91')], then: 'hang' });
    const { c, acks } = consumer(source, cursor);
    c.start();
    await waitFor(() => acks.calls.length === 1, 'the acknowledgment after the reset');
    expect(source.opened).toEqual(['20']);
    await until(async () => (await cursor.load()) === 91, 'the cursor at 91', 15_000);
  });

  it('a stream that ends (the service restarts) is reopened; stop() ends an open stream', async () => {
    const source = new ScriptedSource();
    source.scripts.push({ frames: [{ type: 'live', id: 1 }], then: 'end' });
    const { c } = consumer(source);
    c.start();
    await waitFor(() => source.opened.length === 2, 'reopened');
    expect(source.opened).toEqual(['', '1']);
    await c.stop();
    expect(c.connectCount).toBe(2);
  });
});

describe('inbound SMS cursors', () => {
  let knex: Knex;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    const db = await createTestDatabase('oncall_cursor');
    drop = db.drop;
    knex = await openDatabase({ url: db.url, data_dir: '', pool_max: 2 }, silentLogger());
    await runMigrations(knex, monitorMigrations);
  });
  afterAll(async () => {
    await knex?.destroy();
    await drop?.();
  });

  it.each([
    ['memory', () => new MemoryInboundSmsCursor()],
    ['PostgreSQL', () => new DatabaseInboundSmsCursor(knex, `test-${Math.random()}`)],
  ] as const)('%s: empty at first, then the largest id saved (never back)', async (_name, make) => {
    const cursor = make();
    expect(await cursor.load()).toBeNull();
    await cursor.save(5);
    expect(await cursor.load()).toBe(5);
    await cursor.save(3);
    expect(await cursor.load()).toBe(5);
    await cursor.save(2 ** 40);
    expect(await cursor.load()).toBe(2 ** 40);
  });

  it('PostgreSQL: two replicas share the cursor; a new one reads it', async () => {
    const a = new DatabaseInboundSmsCursor(knex, 'shared');
    const b = new DatabaseInboundSmsCursor(knex, 'shared');
    await Promise.all([a.save(10), b.save(12)]);
    expect(await new DatabaseInboundSmsCursor(knex, 'shared').load()).toBe(12);
  });
});

describe('monitor.oncall.inbound_sms', () => {
  it('is off by default; enabled without grpc_address is refused naming the key; the token is a secret', () => {
    expect(loadMonitorConfig({}, { file: null, env: {} }).oncall.inbound_sms).toEqual({
      enabled: false,
      api_token: '',
      reconnect_min_ms: 500,
      reconnect_max_ms: 30_000,
    });
    let message = '';
    try {
      loadMonitorConfig(
        { oncall: { inbound_sms: { enabled: true, api_token: 'secret-token-value-123' } } },
        { file: null, env: {} },
      );
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/oncall\.inbound_sms\.grpc_address/);
    expect(message).not.toContain('secret-token-value-123');
    const fromEnv = loadMonitorConfig(
      {},
      {
        file: null,
        env: {
          SVC_MONITOR__ONCALL__INBOUND_SMS__ENABLED: 'true',
          SVC_MONITOR__ONCALL__INBOUND_SMS__GRPC_ADDRESS: 'notification:50051',
          SVC_MONITOR__ONCALL__INBOUND_SMS__API_TOKEN: 'secret-token-value-123',
        },
      },
    );
    expect(fromEnv.oncall.inbound_sms).toMatchObject({ enabled: true, grpc_address: 'notification:50051' });
    expect(isSecretKey('api_token')).toBe(true);
  });
});
