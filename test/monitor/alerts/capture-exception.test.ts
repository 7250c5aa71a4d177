/**
 * CaptureException against the monitor in-process: forwarded to a local stand-in DSN host (Sentry's
 * envelope protocol) when `error_tracking.dsn` is set, counted on `/metrics` by service and type
 * with a cap on distinct pairs, 32-hex event ids either way, and bad input as INVALID_ARGUMENT.
 */
import * as grpc from '@grpc/grpc-js';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';
import { unary } from '../../support/grpc-clients';
import { dsnHost } from '../../shared/monitoring/fixtures/dsn-host';
import { Registry } from 'prom-client';
import { captureLogger, promtool } from '../../shared/monitoring/helpers';
import {
  NoopErrorTracker,
  type ErrorTrackerProtocol,
} from '../../../shared/monitoring/errors/error-tracking';
import {
  EXCEPTION_LIMITS,
  ExceptionCapture,
  LOG_LIMIT,
} from '../../../services/monitor/alerts/exception-capture';
import { waitFor } from '../../support/wait';

const PUBLIC_KEY = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';

type Capture = { eventId: string; forwarded: boolean };
type SentryException = { values: Array<{ type: string; value: string }> };

async function scrape(m: RunningMonitorApp): Promise<string> {
  return (await fetch(`${m.baseUrl}/metrics`)).text();
}

function counterLine(service: string, type: string, value: number): RegExp {
  return new RegExp(
    `^monitor_exceptions_captured_total\\{[^}]*service="${service}",type="${type}"[^}]*\\} ${value}$`,
    'm',
  );
}

describe('CaptureException with a DSN', () => {
  it('forwards the exception to the DSN host and counts it on /metrics', async () => {
    const host = await dsnHost();
    const m = await startMonitorApp({
      error_tracking: { dsn: `http://${PUBLIC_KEY}@127.0.0.1:${host.port}/7` },
    });
    let res: Capture;
    try {
      res = (
        await unary<Capture>(m.monitorGrpc, 'captureException', {
          type: 'TypeError',
          message: "cannot read properties of undefined (reading 'id')",
          stacktrace:
            "TypeError: cannot read properties of undefined (reading 'id')\n    at handler (/app/src/orders.js:42:13)",
          sourceService: 'orders',
          environment: 'staging',
          tags: { region: 'eu-west-1' },
          traceId: '0af7651916cd43dd8448eb211c80319c',
          time: timestampFromMs(Date.UTC(2026, 10, 23, 4, 0)),
        })
      ).response;
      expect(res.forwarded).toBe(true);
      expect(res.eventId).toMatch(/^[0-9a-f]{32}$/);
      const body = await scrape(m);
      expect(body).toMatch(counterLine('orders', 'TypeError', 1));
      expect(promtool(body).status).toBe(0);
    } finally {
      // Stopping closes the tracker, which flushes the pending event to the host.
      await m.close();
      await host.close();
    }
    await waitFor(() => host.envelopes.length === 1, 'the envelope');
    const event = host.envelopes[0]!.items.find((i) => i.header.type === 'event')!.payload;
    expect(event.event_id).toBe(res.eventId);
    expect((event.exception as SentryException).values[0]).toMatchObject({
      type: 'TypeError',
      value: "cannot read properties of undefined (reading 'id')",
    });
    expect(event.tags).toMatchObject({
      source_service: 'orders',
      environment: 'staging',
      region: 'eu-west-1',
      trace_id: '0af7651916cd43dd8448eb211c80319c',
    });
    expect(event.extra).toMatchObject({ occurred_at: '2026-11-23T04:00:00.000Z' });
    // The DSN's key travels in the auth header or URL only, never in the event.
    expect(JSON.stringify(event)).not.toContain(PUBLIC_KEY);
  });
});

describe('CaptureException without a DSN', () => {
  let m: RunningMonitorApp;
  beforeAll(async () => {
    m = await startMonitorApp({ alerts: { max_exception_series: 3 } });
  });
  afterAll(() => m.close());

  it('answers forwarded=false with its own 32-hex event id, and counts it', async () => {
    const { response } = await unary<Capture>(m.monitorGrpc, 'captureException', {
      type: 'ValueError',
      sourceService: 'billing',
    });
    expect(response.forwarded).toBe(false);
    expect(response.eventId).toMatch(/^[0-9a-f]{32}$/);
    const again = await m.monitorConnect.captureException({ type: 'ValueError', sourceService: 'billing' });
    expect(again.eventId).not.toBe(response.eventId);
    expect(await scrape(m)).toMatch(counterLine('billing', 'ValueError', 2));
  });

  it('counts at most max_exception_series pairs on their own; the rest under "other"', async () => {
    // The first test used one pair; two more fill the cap of 3.
    for (const type of ['A', 'B'])
      await unary(m.monitorGrpc, 'captureException', { type, sourceService: 'svc' });
    for (let i = 0; i < 20; i++)
      await unary(m.monitorGrpc, 'captureException', { type: `Random${i}`, sourceService: 'svc' });
    // A pair counted before the cap keeps its own series.
    await unary(m.monitorGrpc, 'captureException', { type: 'A', sourceService: 'svc' });
    const body = await scrape(m);
    const series = body.split('\n').filter((l) => l.startsWith('monitor_exceptions_captured_total{'));
    expect(series).toHaveLength(4);
    expect(body).toMatch(counterLine('svc', 'A', 2));
    expect(body).toMatch(counterLine('other', 'other', 20));
    expect(body).not.toContain('Random');
  });

  it.each([
    [{}, 'type is required'],
    [{ type: '   ' }, 'type is required'],
    [{ type: 'T'.repeat(257) }, 'type is longer than 256'],
    [{ type: 'E', stacktrace: 's'.repeat(65_537) }, 'stacktrace is longer'],
    [{ type: 'E', traceId: 'not-a-trace' }, 'trace_id must be 32 lowercase hex'],
    [{ type: 'E', tags: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`t${i}`, 'v'])) }, 'tags'],
    [{ type: 'E', tags: { k: 'v'.repeat(201) } }, 'tags.k is longer than 200'],
    // Past year 9999 and before year 1: found by the fuzzer, it was INTERNAL (toISOString threw).
    [{ type: 'E', time: { seconds: 9_000_000_000_000n, nanos: 0 } }, 'time is out of range'],
    [{ type: 'E', time: { seconds: -62_135_596_801n, nanos: 0 } }, 'time is out of range'],
  ])('bad input (case %#) is INVALID_ARGUMENT with a reason', async (request, reason) => {
    const err = await unary(m.monitorGrpc, 'captureException', request).then(
      () => {
        throw new Error('expected the call to fail');
      },
      (e: grpc.ServiceError) => e,
    );
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toContain(reason);
  });
});

describe('the local note of an exception captured without a DSN', () => {
  it('logs at most LOG_LIMIT lines per minute, counts the rest in the next line, and never the message', () => {
    const { logger, lines } = captureLogger();
    let now = 1_000_000;
    const capture = new ExceptionCapture(new NoopErrorTracker(), new Registry(), 10, logger, {
      now: () => now,
      monotonic: () => now,
    });
    const secret = 'card 4111 1111 1111 1111 of jane@example.com';
    for (let i = 0; i < LOG_LIMIT.lines + 5; i++) {
      expect(capture.capture({ type: 'TypeError', message: secret, sourceService: 'shop' }).forwarded).toBe(
        false,
      );
    }
    const notes = () => lines.filter((l) => l.event === 'exception_captured');
    expect(notes()).toHaveLength(LOG_LIMIT.lines);
    expect(JSON.stringify(lines)).not.toContain('jane@example.com');

    now += LOG_LIMIT.windowMs;
    capture.capture({ type: 'TypeError', message: secret, sourceService: 'shop' });
    expect(notes()).toHaveLength(LOG_LIMIT.lines + 1);
    expect(notes().at(-1)).toMatchObject({ type: 'TypeError', source_service: 'shop', not_logged_before: 5 });
  });
});

describe('the text of a captured exception', () => {
  const NUL = '\u0000';
  const LONE = '\ud800';
  const WORLD = 'مرحبا 世界 🚀';

  /** A tracker that keeps what it is given, so the text that reaches it can be read back. */
  function recording(): {
    tracker: ErrorTrackerProtocol;
    errors: Error[];
    tags: Array<Record<string, string>>;
  } {
    const errors: Error[] = [];
    const tags: Array<Record<string, string>> = [];
    const tracker: ErrorTrackerProtocol = {
      active: true,
      captureException: (e, context) => {
        errors.push(e as Error);
        tags.push({ ...(context?.tags as Record<string, string>) });
        return 'f'.repeat(32);
      },
      captureMessage: () => undefined,
      flush: () => Promise.resolve(true),
      close: () => Promise.resolve(true),
    };
    return { tracker, errors, tags };
  }

  // Found by a black-box probe: a NUL in the type or the service was counted and rendered raw on
  // /metrics, a NUL or a lone surrogate in any field went to the tracker; every other monitor text
  // (alerts, silences, SLOs) refuses both as INVALID_ARGUMENT.
  it.each([
    [{ type: `Type${NUL}Error` }, 'type'],
    [{ type: `Type${LONE}Error` }, 'type'],
    [{ type: 'E', message: `m${NUL}` }, 'message'],
    [{ type: 'E', message: `m${LONE}` }, 'message'],
    [{ type: 'E', stacktrace: `at f (${NUL})` }, 'stacktrace'],
    [{ type: 'E', sourceService: `shop${NUL}` }, 'source_service'],
    [{ type: 'E', environment: `prod${LONE}` }, 'environment'],
    [{ type: 'E', tags: { [`k${NUL}`]: 'v' } }, 'tags'],
    [{ type: 'E', tags: { k: `v${LONE}` } }, 'tags.k'],
  ])(
    'a NUL or a lone surrogate (case %#) is INVALID_ARGUMENT on the field; nothing is counted or sent',
    async (input, field) => {
      const { tracker, errors } = recording();
      const registry = new Registry();
      const capture = new ExceptionCapture(tracker, registry, 10);
      expect(() => capture.capture(input)).toThrow(expect.objectContaining({ field }));
      expect(errors).toHaveLength(0);
    },
  );

  it.each([
    [{ type: 'Type\nError' }, 'type'],
    [{ type: 'E', sourceService: 'shop\tfront' }, 'source_service'],
    [{ type: 'E', environment: 'prod\r' }, 'environment'],
    [{ type: 'E', tags: { k: 'line\nbreak' } }, 'tags.k'],
  ])('a one-line name with a control character (case %#) is INVALID_ARGUMENT', (input, field) => {
    const capture = new ExceptionCapture(recording().tracker, new Registry(), 10);
    expect(() => capture.capture(input)).toThrow(
      expect.objectContaining({ field, message: `${field} contains control characters` }),
    );
  });

  it('keeps emoji, CJK and RTL text as sent, at each limit in characters (code points); one past is refused', () => {
    const { tracker, errors, tags } = recording();
    const capture = new ExceptionCapture(tracker, new Registry(), 10);
    const fill = (n: number) =>
      Array.from({ length: n }, (_, i) => [...WORLD][i % [...WORLD].length]).join('');
    const type = `🚀${fill(EXCEPTION_LIMITS.typeChars - 1)}`;
    const message = `${fill(EXCEPTION_LIMITS.messageChars - 2)}\n🚀`;
    const value = fill(EXCEPTION_LIMITS.tagValueChars);
    capture.capture({
      type,
      message,
      stacktrace: `${type}: ${WORLD}\n    at f (file.js:1:1)`,
      tags: { 世界: value },
    });
    expect(errors[0]).toMatchObject({ name: type, message });
    expect(tags[0]).toMatchObject({ 世界: value });
    // One below the limits passes too; one past each is refused.
    capture.capture({ type: type.slice(2), message: message.slice(2) });
    expect(() => capture.capture({ type: `${type}世` })).toThrow('type is longer than 256 characters');
    expect(() => capture.capture({ type: 'E', message: `${message}🚀` })).toThrow(
      'message is longer than 8192 characters',
    );
    expect(() => capture.capture({ type: 'E', tags: { k: `${value}ע` } })).toThrow(
      'tags.k is longer than 200 characters',
    );
  });

  it('a NUL over gRPC is INVALID_ARGUMENT and never reaches /metrics', async () => {
    const m = await startMonitorApp({});
    try {
      const err = await unary(m.monitorGrpc, 'captureException', {
        type: `Boom${NUL}`,
        sourceService: 'shop',
      }).then(
        () => undefined,
        (e: grpc.ServiceError) => e,
      );
      expect(err?.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err?.details).toBe('type contains control characters');
      const ok = await m.monitorConnect.captureException({ type: 'ошибка 错误 🚀', sourceService: 'שירות' });
      expect(ok.eventId).toMatch(/^[0-9a-f]{32}$/);
      const body = await scrape(m);
      expect(body).not.toContain(NUL);
      expect(body).toMatch(counterLine('שירות', 'ошибка 错误 🚀', 1));
    } finally {
      await m.close();
    }
  });
});
