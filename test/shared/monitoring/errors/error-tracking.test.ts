import type { ServerResponse } from 'node:http';
import { context, type ProxyTracerProvider, trace } from '@opentelemetry/api';
import { errorTrackingConfigSchema } from '../../../../shared/monitoring/config';
import { MonitoringConfigError } from '../../../../shared/monitoring/errors';
import {
  absentSentry,
  type ErrorTrackerProtocol,
  NoopErrorTracker,
  SentryErrorTracker,
  setupErrorTracking,
} from '../../../../shared/monitoring/errors/error-tracking';
import { captureLogger, listen } from '../helpers';
import { dsnHost } from '../fixtures/dsn-host';

const PUBLIC_KEY = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function track(tracker: ErrorTrackerProtocol): ErrorTrackerProtocol {
  cleanups.push(() => tracker.close(0.5));
  return tracker;
}

describe('setupErrorTracking without a DSN', () => {
  it.each([undefined, '', '   '])(
    'dsn %p gives the no-op tracker, which logs locally and has nothing to flush',
    async (dsn) => {
      const { logger, lines } = captureLogger();
      const tracker = setupErrorTracking(dsn === undefined ? {} : { dsn }, { logger });
      expect(tracker).toBeInstanceOf(NoopErrorTracker);
      expect(tracker.active).toBe(false);
      expect(tracker.captureException(new RangeError('out of range'))).toBeUndefined();
      const line = lines.find((l) => l.msg === 'exception captured (error tracking off)');
      expect((line?.err as { type?: string } | undefined)?.type).toBe('RangeError');
      expect(await tracker.flush()).toBe(true);
    },
  );

  it('a DSN without the client library installed falls back to the no-op tracker with a warning', () => {
    const { logger, lines } = captureLogger();
    const tracker = setupErrorTracking(
      { dsn: `http://${PUBLIC_KEY}@127.0.0.1:9/1` },
      { logger, loader: absentSentry },
    );
    expect(tracker).toBeInstanceOf(NoopErrorTracker);
    expect(lines.some((l) => String(l.msg).includes('not installed'))).toBe(true);
  });
});

describe('setupErrorTracking with a DSN', () => {
  it('sends a captured exception to the DSN host as an envelope with its type, message and environment', async () => {
    const host = await dsnHost();
    cleanups.push(() => host.close());
    const tracker = track(
      setupErrorTracking({
        dsn: `http://${PUBLIC_KEY}@127.0.0.1:${host.port}/42`,
        environment: 'staging',
        traces_sample_rate: 0.25,
      }),
    );
    expect(tracker).toBeInstanceOf(SentryErrorTracker);
    expect(tracker.active).toBe(true);
    const id = tracker.captureException(new TypeError('bad payload'), { tags: { area: 'inbox' } });
    expect(await tracker.flush()).toBe(true);
    expect(host.envelopes).toHaveLength(1);
    const envelope = host.envelopes[0]!;
    expect(envelope.path).toMatch(/^\/api\/42\/envelope\//);
    expect(envelope.header.event_id).toBe(id);
    const event = envelope.items.find((i) => i.header.type === 'event')!.payload;
    const exception = (event.exception as { values: Array<{ type: string; value: string }> }).values[0]!;
    expect(exception).toMatchObject({ type: 'TypeError', value: 'bad payload' });
    expect(event.environment).toBe('staging');
    expect(event.tags).toMatchObject({ area: 'inbox' });
  });

  it('sends a captured message with its level; an empty environment uses the service default', async () => {
    const host = await dsnHost();
    cleanups.push(() => host.close());
    const tracker = track(
      setupErrorTracking(
        { dsn: `http://${PUBLIC_KEY}@127.0.0.1:${host.port}/7` },
        { defaultEnvironment: 'test' },
      ),
    );
    tracker.captureMessage('queue backlog', 'warning');
    expect(await tracker.flush(2.0)).toBe(true);
    const event = host.envelopes[0]!.items[0]!.payload;
    expect(event).toMatchObject({ message: 'queue backlog', level: 'warning', environment: 'test' });
  });

  it('send_default_pii false keeps the host name out of events; true sends it', async () => {
    const host = await dsnHost();
    cleanups.push(() => host.close());
    const dsn = `http://${PUBLIC_KEY}@127.0.0.1:${host.port}/3`;
    const off = track(setupErrorTracking({ dsn, send_default_pii: false }));
    off.captureMessage('no pii');
    await off.flush();
    const on = track(setupErrorTracking({ dsn, send_default_pii: true }));
    on.captureMessage('pii');
    await on.flush();
    const [withoutPii, withPii] = host.envelopes.map((e) => e.items[0]!.payload);
    expect(withoutPii).not.toHaveProperty('server_name');
    expect(typeof withPii!.server_name).toBe('string');
  });

  it('hands environment, traces sample rate and send-default-PII to the SDK', () => {
    const tracker = track(
      setupErrorTracking({
        dsn: `http://${PUBLIC_KEY}@127.0.0.1:9/1`,
        environment: 'prod-eu',
        traces_sample_rate: 0.1,
        send_default_pii: true,
      }),
    ) as SentryErrorTracker;
    expect(tracker.settings).toEqual({ environment: 'prod-eu', tracesSampleRate: 0.1, sendDefaultPii: true });
  });

  it('flush resolves false when the DSN host does not answer within the timeout', async () => {
    const held: ServerResponse[] = [];
    const host = await listen((_req, res) => void held.push(res));
    cleanups.push(() => host.close());
    const tracker = track(setupErrorTracking({ dsn: `http://${PUBLIC_KEY}@127.0.0.1:${host.port}/5` }));
    tracker.captureException(new Error('stuck'));
    expect(await tracker.flush(0.2)).toBe(false);
    for (const res of held) res.end();
  });

  it('never logs the DSN, and an invalid DSN is a MonitoringConfigError that does not echo it', async () => {
    const { logger, lines } = captureLogger();
    const tracker = track(setupErrorTracking({ dsn: `http://${PUBLIC_KEY}@127.0.0.1:9/1` }, { logger }));
    tracker.captureException(new Error('x'));
    await tracker.flush(0.5);
    expect(lines.some((l) => l.msg === 'error tracking on')).toBe(true);
    expect(JSON.stringify(lines)).not.toContain(PUBLIC_KEY);
    const bad = `ftp://${PUBLIC_KEY}@host/1`;
    const err = (() => {
      try {
        setupErrorTracking({ dsn: bad });
      } catch (e) {
        return e as Error;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(MonitoringConfigError);
    expect(err!.message).not.toContain(PUBLIC_KEY);
  });

  it('installs no OpenTelemetry setup and no process-wide handlers beside ours', async () => {
    const provider = trace.getTracerProvider() as ProxyTracerProvider;
    const delegate = provider.getDelegate();
    const contextManager = context.active();
    const handlers = ['uncaughtException', 'unhandledRejection'].map((e) => process.listenerCount(e));
    const host = await dsnHost();
    cleanups.push(() => host.close());
    const tracker = track(
      setupErrorTracking({ dsn: `http://${PUBLIC_KEY}@127.0.0.1:${host.port}/4`, traces_sample_rate: 1 }),
    );
    tracker.captureException(new Error('x'));
    await tracker.flush();
    expect(trace.getTracerProvider()).toBe(provider);
    expect(provider.getDelegate()).toBe(delegate);
    expect(context.active()).toBe(contextManager);
    expect(['uncaughtException', 'unhandledRejection'].map((e) => process.listenerCount(e))).toEqual(
      handlers,
    );
  });

  it('after close, captures are ignored', async () => {
    const host = await dsnHost();
    cleanups.push(() => host.close());
    const tracker = setupErrorTracking({ dsn: `http://${PUBLIC_KEY}@127.0.0.1:${host.port}/9` });
    await tracker.close();
    expect(tracker.captureException(new Error('late'))).toBeUndefined();
  });
});

describe('errorTrackingConfigSchema', () => {
  it('defaults to off and accepts a well-formed DSN', () => {
    expect(errorTrackingConfigSchema().parse(undefined)).toEqual({
      dsn: '',
      environment: '',
      traces_sample_rate: 0,
      send_default_pii: false,
    });
    expect(
      errorTrackingConfigSchema().parse({ dsn: `https://${PUBLIC_KEY}@o1.ingest.example.com/12` }).dsn,
    ).toContain('@');
  });

  it('rejects a malformed DSN without echoing it, and a sample rate outside 0..1', () => {
    const result = errorTrackingConfigSchema().safeParse({ dsn: `${PUBLIC_KEY}-not-a-url` });
    expect(result.success).toBe(false);
    expect(JSON.stringify(result.error!.issues)).not.toContain(PUBLIC_KEY);
    expect(errorTrackingConfigSchema().safeParse({ traces_sample_rate: 1.5 }).success).toBe(false);
  });
});
