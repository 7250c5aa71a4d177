import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  AlertDeliveryError,
  type AlertBatch,
  alertsConfigSchema,
  createAlertDispatcher,
  WebhookChannel,
} from '../../../../shared/monitoring';
import { captureLogger, FakeClock, FakeTimers, listen, type TestServer } from '../helpers';

const batch: AlertBatch = {
  tier: 'P0_PAGE',
  reason: 'immediate',
  dropped: 0,
  alerts: [
    {
      kind: 'alert',
      title: 'db down',
      message: 'primary unreachable',
      severity: 'critical',
      tier: 'P0_PAGE',
      context: { slo: 'checkout', burn_rate: 2.5 },
      raisedAt: Date.UTC(2026, 0, 5, 8, 0),
    },
  ],
};

interface Received {
  method?: string;
  headers: IncomingMessage['headers'];
  body: unknown;
}

/** A webhook receiver answering with the given statuses in turn (the last one repeats). */
async function receiver(statuses: number[]): Promise<{ server: TestServer; received: Received[] }> {
  const received: Received[] = [];
  const server = await listen((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({
        method: req.method,
        headers: req.headers,
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
      });
      res.statusCode = statuses[Math.min(received.length - 1, statuses.length - 1)]!;
      res.end('ok');
    });
  });
  return { server, received };
}

const noSleep = async () => {};

describe('WebhookChannel', () => {
  it('POSTs the batch as JSON with the configured headers', async () => {
    const { server, received } = await receiver([200]);
    try {
      await new WebhookChannel({
        url: `${server.url}/hooks/abc`,
        headers: { authorization: 'Bearer t0k' },
      }).send(batch);
      expect(received).toHaveLength(1);
      expect(received[0]!.method).toBe('POST');
      expect(received[0]!.headers['content-type']).toBe('application/json');
      expect(received[0]!.headers.authorization).toBe('Bearer t0k');
      expect(received[0]!.body).toEqual({
        tier: 'P0_PAGE',
        reason: 'immediate',
        dropped: 0,
        alerts: [
          {
            kind: 'alert',
            title: 'db down',
            message: 'primary unreachable',
            severity: 'critical',
            tier: 'P0_PAGE',
            raised_at: '2026-01-05T08:00:00.000Z',
            context: { slo: 'checkout', burn_rate: 2.5 },
          },
        ],
      });
    } finally {
      await server.close();
    }
  });

  it('retries 503 and 429 with doubling backoff until accepted', async () => {
    const { server, received } = await receiver([503, 429, 200]);
    const waits: number[] = [];
    try {
      await new WebhookChannel({
        url: server.url,
        maxRetries: 3,
        backoffSeconds: 0.25,
        sleep: async (ms) => void waits.push(ms),
      }).send(batch);
      expect(received).toHaveLength(3);
      expect(waits).toEqual([250, 500]);
    } finally {
      await server.close();
    }
  });

  it('gives up after maxRetries, and logs only the origin of the URL', async () => {
    const { server, received } = await receiver([500]);
    const { logger, lines } = captureLogger();
    try {
      const channel = new WebhookChannel({
        url: `${server.url}/secret-path?token=abc`,
        maxRetries: 2,
        sleep: noSleep,
        logger,
      });
      await expect(channel.send(batch)).rejects.toThrow(AlertDeliveryError);
      await expect(channel.send(batch)).rejects.toThrow('HTTP 500');
      expect(received).toHaveLength(6);
      expect(JSON.stringify(lines)).not.toContain('secret-path');
      expect(JSON.stringify(lines)).not.toContain('abc');
      expect(lines[0]).toMatchObject({ target: server.url, attempt: 1, problem: 'HTTP 500' });
    } finally {
      await server.close();
    }
  });

  it('does not retry a 400: the same body would fail again', async () => {
    const { server, received } = await receiver([400]);
    try {
      await expect(
        new WebhookChannel({ url: server.url, maxRetries: 3, sleep: noSleep }).send(batch),
      ).rejects.toThrow('HTTP 400');
      expect(received).toHaveLength(1);
    } finally {
      await server.close();
    }
  });

  it('does not follow a redirect to another URL', async () => {
    const { server: elsewhere, received: stolen } = await receiver([200]);
    let hits = 0;
    const redirecting = await listen((_req, res) => {
      hits++;
      res.writeHead(307, { location: elsewhere.url }).end();
    });
    try {
      const channel = new WebhookChannel({
        url: redirecting.url,
        headers: { authorization: 'Bearer t' },
        sleep: noSleep,
      });
      await expect(channel.send(batch)).rejects.toThrow('HTTP 307');
      expect(hits).toBe(1);
      expect(stolen).toHaveLength(0);
    } finally {
      await redirecting.close();
      await elsewhere.close();
    }
  });

  it('times out an attempt that gets no answer and reports it', async () => {
    let requests = 0;
    const server = await listen(() => {
      requests++; // never answers
    });
    try {
      const channel = new WebhookChannel({
        url: server.url,
        timeoutSeconds: 0.2,
        maxRetries: 1,
        sleep: noSleep,
      });
      await expect(channel.send(batch)).rejects.toThrow('timed out');
      expect(requests).toBe(2);
    } finally {
      await server.close();
    }
  });

  it('reports a refused connection as a delivery error, not a crash', async () => {
    const { server } = await receiver([200]);
    const url = server.url;
    await server.close();
    await expect(new WebhookChannel({ url, maxRetries: 0 }).send(batch)).rejects.toThrow('connection failed');
  });
});

describe('createAlertDispatcher with a webhook', () => {
  it('sends only the tiers the webhook lists', async () => {
    const { server, received } = await receiver([200]);
    const clock = new FakeClock(0, Date.UTC(2026, 0, 5, 10, 0));
    const config = alertsConfigSchema().parse({
      channels: [{ name: 'hook', type: 'webhook', tiers: ['P0_PAGE'], webhook: { url: server.url } }],
    });
    const d = createAlertDispatcher(config, { clock, timers: new FakeTimers(clock) });
    try {
      await d.sendAlert('page me', 'm', 'critical', { tier: 'P0_PAGE' });
      await d.sendAlert('not me', 'm', 'high', { tier: 'P1_BUSINESS_HOURS' });
      expect(received.map((r) => (r.body as { alerts: Array<{ title: string }> }).alerts[0]!.title)).toEqual([
        'page me',
      ]);
    } finally {
      await d.shutdown();
      await server.close();
    }
  });
});
