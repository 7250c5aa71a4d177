/**
 * The real notification process (node dist/services/notification/main.js, real ports) with tracing
 * exported over OTLP/HTTP to a local receiver, as it would export to the monitor's `POST /v1/traces`,
 * and reporting to a stand-in MonitorService: a caller's SendEmail (its traceparent in the gRPC
 * metadata) yields one trace, caller -> SendEmail server span -> delivery attempt -> provider call,
 * with the memory store and with the database store on real PostgreSQL. The exporter posts to
 * `<endpoint>/v1/traces` with the configured authorization header; the token is in no log line.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { NotificationService } from '../../../shared/gen/svc/notification/v1/notification_pb';
import { Client } from 'pg';
import { createTestDatabase } from '../../support/database';
import { grpcClient, unary } from '../../support/grpc-clients';
import { startServiceProcess, type ServiceProcess } from '../../support/service-process';
import { startSmtpPeer, type SmtpPeer } from '../../support/smtp-peer';
import { waitFor } from '../../support/wait';
import { startStandInMonitor, type StandInMonitor } from './stand-in-monitor';

const TOKEN = 'otlp-and-monitor-token-9a8b7c6d5e4f';

/** One span as OTLP/JSON carries it (ids in hex). */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
}

/** A local OTLP/HTTP trace receiver: what was posted where, with which authorization. */
interface OtlpReceiver {
  url: string;
  spans: OtlpSpan[];
  requests: { path: string; authorization: string | undefined }[];
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const receiver: Omit<OtlpReceiver, 'url' | 'close'> = { spans: [], requests: [] };
  const server: Server = createServer((req, res) => {
    void readBody(req).then((body) => {
      receiver.requests.push({ path: req.url ?? '', authorization: req.headers.authorization });
      const doc = JSON.parse(body) as {
        resourceSpans?: { scopeSpans?: { spans?: OtlpSpan[] }[] }[];
      };
      for (const rs of doc.resourceSpans ?? [])
        for (const ss of rs.scopeSpans ?? []) receiver.spans.push(...(ss.spans ?? []));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    ...receiver,
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

let peer: SmtpPeer;
let monitor: StandInMonitor;
beforeAll(async () => {
  peer = await startSmtpPeer();
  monitor = await startStandInMonitor();
});
afterAll(async () => {
  await peer.close();
  await monitor.stop();
});

function env(receiver: OtlpReceiver, extra: Record<string, string>): Record<string, string> {
  return {
    SVC_NOTIFICATION__INBOX__STORE_BACKEND: 'memory',
    SVC_NOTIFICATION__DELIVERY__STORE_BACKEND: 'memory',
    SVC_NOTIFICATION__MAILER__BACKENDS: JSON.stringify([
      {
        name: 'relay',
        primary: true,
        driver: 'smtp',
        from_email: 'noreply@sender.example.com',
        smtp: { host: '127.0.0.1', port: peer.port, pool: false },
      },
    ]),
    SVC_NOTIFICATION__TRACING__ENABLED: 'true',
    SVC_NOTIFICATION__TRACING__EXPORTER: 'otlp',
    // The monitor's HTTP port: the exporter appends /v1/traces to an endpoint without a path.
    SVC_NOTIFICATION__OPENTELEMETRY__ENDPOINT: receiver.url,
    SVC_NOTIFICATION__OPENTELEMETRY__HEADERS: JSON.stringify({ authorization: `Bearer ${TOKEN}` }),
    SVC_NOTIFICATION__OPENTELEMETRY__EXPORT_INTERVAL: '0.1',
    SVC_NOTIFICATION__MONITOR__GRPC_ADDRESS: monitor.address,
    SVC_NOTIFICATION__MONITOR__API_TOKEN: TOKEN,
    SVC_NOTIFICATION__MONITOR__FLUSH_INTERVAL_MS: '50',
    ...extra,
  };
}

const cases: [string, () => Promise<{ extra: Record<string, string>; drop(): Promise<void> }>][] = [
  ['memory store', async () => ({ extra: {}, drop: async () => undefined })],
  [
    'database store (PostgreSQL)',
    async () => {
      const db = await createTestDatabase('proctrace');
      return {
        extra: {
          SVC_NOTIFICATION__DELIVERY__STORE_BACKEND: 'database',
          SVC_NOTIFICATION__DATABASE__URL: db.url,
        },
        drop: () => db.drop(),
      };
    },
  ],
];

describe.each(cases)('the notification process with the %s', (_label, setup) => {
  let receiver: OtlpReceiver;
  let proc: ServiceProcess | undefined;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    const s = await setup();
    drop = s.drop;
    proc = await startServiceProcess('notification', env(receiver, s.extra));
  }, 120_000);
  afterAll(async () => {
    await proc?.stop();
    await receiver.close();
    await drop();
  });

  it('one trace runs from the caller through SendEmail and the delivery attempt to the provider call', async () => {
    const traceId = randomBytes(16).toString('hex');
    const callerSpanId = randomBytes(8).toString('hex');
    const client = grpcClient(NotificationService, `127.0.0.1:${proc!.grpcPort}`);
    const before = peer.acceptedCount;
    const samplesBefore = monitor.samples.get('notification_delivery_latency_email_ms')?.length ?? 0;
    try {
      await unary(
        client,
        'sendEmail',
        { to: ['jane@example.com'], subject: 'Traced', text: 'Hi' },
        { metadata: { traceparent: `00-${traceId}-${callerSpanId}-01` } },
      );
    } finally {
      client.close();
    }
    await peer.whenAccepted(before + 1);
    const inTrace = () => receiver.spans.filter((s) => s.traceId === traceId);
    const named = (name: string) => inTrace().find((s) => s.name === name);
    await waitFor(
      () => !!named('delivery.attempt') && !!named('delivery.provider.send') && inTrace().length >= 3,
      'the exported spans of the trace',
      20_000,
    );

    const server = inTrace().find((s) => s.name.endsWith('NotificationService/SendEmail'));
    const attempt = named('delivery.attempt')!;
    const send = named('delivery.provider.send')!;
    expect(server).toBeDefined();
    expect(server!.parentSpanId).toBe(callerSpanId);
    expect(attempt.parentSpanId).toBe(server!.spanId);
    expect(send.parentSpanId).toBe(attempt.spanId);

    // Exported where the monitor listens, with the configured header.
    expect(receiver.requests.length).toBeGreaterThan(0);
    for (const r of receiver.requests) {
      expect(r.path).toBe('/v1/traces');
      expect(r.authorization).toBe(`Bearer ${TOKEN}`);
    }
    // The same delivery reached the monitor as a latency sample, with the bearer token.
    await waitFor(
      () => (monitor.samples.get('notification_delivery_latency_email_ms')?.length ?? 0) > samplesBefore,
      'the latency sample at the monitor',
    );
    expect(monitor.authorizations.at(-1)).toBe(`Bearer ${TOKEN}`);
    expect(proc!.logs.some((l) => l.includes('reporting to the monitor'))).toBe(true);
    expect(proc!.logs.filter((l) => l.includes(TOKEN))).toEqual([]);
  });
});

describe('an unexpected error in the process', () => {
  it('is reported as CaptureException carrying the trace id of the SendEmail call', async () => {
    const receiver = await startOtlpReceiver();
    const db = await createTestDatabase('proccapture');
    let proc: ServiceProcess | undefined;
    const client = new Client({ connectionString: db.url });
    try {
      proc = await startServiceProcess(
        'notification',
        env(receiver, {
          SVC_NOTIFICATION__DELIVERY__STORE_BACKEND: 'database',
          SVC_NOTIFICATION__DATABASE__URL: db.url,
        }),
      );
      // The table disappears under the running service: the next SendEmail fails as INTERNAL.
      await client.connect();
      await client.query('ALTER TABLE deliveries RENAME TO deliveries_gone');
      const traceId = randomBytes(16).toString('hex');
      const grpc = grpcClient(NotificationService, `127.0.0.1:${proc.grpcPort}`);
      const before = monitor.exceptions.length;
      try {
        await expect(
          unary(
            grpc,
            'sendEmail',
            { to: ['jane@example.com'], subject: 'Boom', text: 'Hi' },
            { metadata: { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` } },
          ),
        ).rejects.toMatchObject({ code: 13 });
      } finally {
        grpc.close();
      }
      await waitFor(() => monitor.exceptions.length > before, 'the captured exception', 20_000);
      const e = monitor.exceptions.at(-1)!;
      expect(e).toMatchObject({ sourceService: 'notification', traceId });
      expect(e.message).toContain('deliveries');
      // Only spans go out over OTLP, to the configured endpoint: no SDK default metric exporter
      // posting to localhost:4318 (it failed at the latest in the final flush of the shutdown).
      expect(await proc.stop()).toBe(0);
      expect(proc.logs.filter((l) => l.includes('export failed'))).toEqual([]);
    } finally {
      await client.end().catch(() => undefined);
      await proc?.stop();
      await receiver.close();
      await db.drop();
    }
  }, 120_000);
});
