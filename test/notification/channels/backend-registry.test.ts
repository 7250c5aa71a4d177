/**
 * BackendRegistry, the one registry of named backends every channel fills: the primary, lookup by
 * name, an unknown name, no backend at all, health checks (through the shared HealthChecker), close,
 * and the pipeline's view over several channels (registryLookup).
 */
import { HealthChecker } from '../../../shared/monitoring/health/checker';
import { HealthStatus } from '../../../shared/monitoring/health/result';
import { FailedPreconditionError, InvalidArgumentError } from '../../../shared/errors';
import {
  type BackendHealthResult,
  BackendRegistry,
  type RegisteredDriver,
  registryLookup,
} from '../../../services/notification/channels/backend-registry';
import type { Channel, SendOutcome } from '../../../services/notification/delivery/driver';

interface ChatBackend {
  name: string;
  primary: boolean;
  driver: string;
  /** The test's stand-in for a provider: whether it answers the probe. */
  up?: boolean;
  /** Whether closing it fails. */
  closeFails?: boolean;
}

/** A backend of a made-up fourth channel: what a driver must offer to be registered. */
class ChatDriver implements RegisteredDriver {
  readonly driver = 'chat_webhook';
  readonly name: string;
  closed = false;
  constructor(
    readonly channel: Channel,
    private readonly backend: ChatBackend,
  ) {
    this.name = backend.name;
  }
  async send(): Promise<SendOutcome> {
    return this.closed ? { class: 'retryable', reason: 'closed' } : { class: 'sent' };
  }
  async checkHealth(): Promise<BackendHealthResult> {
    const details = { backend: this.name, driver: this.driver, latency_ms: 0 };
    return this.backend.up === false
      ? { status: 'degraded', details, message: 'chat API check failed' }
      : { status: 'healthy', details };
  }
  async close(): Promise<void> {
    this.closed = true;
    if (this.backend.closeFails) throw new Error('close failed');
  }
}

const backend = (name: string, more: Partial<ChatBackend> = {}): ChatBackend => ({
  name,
  primary: false,
  driver: 'chat_webhook',
  ...more,
});

function registry(backends: ChatBackend[], channel: Channel = 'sms', kind = 'chat') {
  return new BackendRegistry({ channel, kind, backends, create: (b) => new ChatDriver(channel, b) });
}

describe('BackendRegistry', () => {
  it('builds one driver per backend, in config order, each found by its name', () => {
    const chat = registry([backend('a'), backend('b'), backend('c')]);

    expect(chat.names).toEqual(['a', 'b', 'c']);
    expect(chat.drivers().map((d) => d.name)).toEqual(['a', 'b', 'c']);
    expect(chat.get('b').name).toBe('b');
    expect(chat.find('c')).toBe(chat.get('c'));
  });

  it('serves the backend marked primary for unnamed use, and lists it first for routing', () => {
    const chat = registry([backend('a'), backend('b', { primary: true }), backend('c')]);

    expect(chat.primary).toBe('b');
    expect(chat.get().name).toBe('b');
    expect(chat.get('')).toBe(chat.get('b'));
    expect(chat.find()).toBe(chat.get('b'));
    expect(chat.primaryFirst()).toEqual(['b', 'a', 'c']);
  });

  it('without a primary flag, the first backend is the primary', () => {
    const chat = registry([backend('first'), backend('second')]);

    expect(chat.primary).toBe('first');
    expect(chat.get().name).toBe('first');
  });

  it('an unknown name is INVALID_ARGUMENT naming the field backend and the configured names', () => {
    const chat = registry([backend('a'), backend('b')]);

    const get = () => chat.get('nope');

    expect(get).toThrow(InvalidArgumentError);
    expect(get).toThrow(
      expect.objectContaining({
        field: 'backend',
        message: 'backend: unknown chat backend "nope" (configured: a, b)',
      }),
    );
    expect(chat.find('nope')).toBeUndefined();
  });

  it('an unknown name is cut on code points in the error, never inside an emoji', () => {
    const chat = registry([backend('a')]);
    const name = 'x'.repeat(99) + '😀😀';

    // 100 UTF-16 code units: the first emoji would end at 101, so the cut falls before it, not inside.
    expect(() => chat.get(name)).toThrow(
      `unknown chat backend ${JSON.stringify('x'.repeat(99))} (configured: a)`,
    );
  });

  it('with no backend, get is FAILED_PRECONDITION and find, health and routing are empty', () => {
    const chat = registry([]);

    expect(() => chat.get()).toThrow(FailedPreconditionError);
    expect(() => chat.get('a')).toThrow(new FailedPreconditionError('no chat backend configured'));
    expect(chat.primary).toBeUndefined();
    expect(chat.find()).toBeUndefined();
    expect(chat.healthChecks()).toEqual([]);
    expect(chat.primaryFirst()).toEqual([]);
  });

  it('gives one health check per backend, notifications.<kind>.<name>, naming channel and backend', () => {
    const chat = registry([backend('a'), backend('b')], 'push', 'Chat');

    const checks = chat.healthChecks();

    expect(checks.map(({ name, channel, backend }) => ({ name, channel, backend }))).toEqual([
      { name: 'notifications.chat.a', channel: 'push', backend: 'a' },
      { name: 'notifications.chat.b', channel: 'push', backend: 'b' },
    ]);
  });

  it('a backend whose provider does not answer makes the health report degraded, not unhealthy', async () => {
    const chat = registry([backend('up'), backend('down', { up: false })]);
    const checker = new HealthChecker();
    for (const c of chat.healthChecks()) checker.add(c.name, c.check);

    const report = await checker.runAllWithSummary();

    expect(report.checks['notifications.chat.up']!.status).toBe(HealthStatus.HEALTHY);
    expect(report.checks['notifications.chat.down']!.status).toBe(HealthStatus.DEGRADED);
    expect(report.checks['notifications.chat.down']!.message).toBe('chat API check failed');
    expect(report.status).toBe(HealthStatus.DEGRADED);
  });

  it('close closes every driver, also after one of them fails to close', async () => {
    const chat = registry([backend('a', { closeFails: true }), backend('b'), backend('c')]);

    await chat.close();

    expect(chat.drivers().map((d) => d.closed)).toEqual([true, true, true]);
    await expect(chat.get('b').send()).resolves.toMatchObject({ class: 'retryable' });
  });

  it('closes once: a second close closes no driver again', async () => {
    const closes: string[] = [];
    const chat = new BackendRegistry({
      channel: 'sms',
      kind: 'chat',
      backends: [backend('a'), backend('b')],
      create: (b) => {
        const driver = new ChatDriver('sms', b);
        const close = driver.close.bind(driver);
        driver.close = async () => {
          closes.push(driver.name);
          await close();
        };
        return driver;
      },
    });

    await Promise.all([chat.close(), chat.close()]);
    await chat.close();

    expect(closes).toEqual(['a', 'b']);
  });
});

describe('registryLookup (the pipeline view of every channel)', () => {
  const email = registry([backend('relay'), backend('api', { primary: true })], 'email', 'mailer');
  const sms = registry([backend('twilio')], 'sms', 'SMS');
  const lookup = registryLookup([email, sms]);

  it('finds a backend by channel and name, the channel primary when no name is given', () => {
    expect(lookup('email', 'relay')).toBe(email.get('relay'));
    expect(lookup('email', undefined)).toBe(email.get('api'));
    expect(lookup('sms', undefined)).toBe(sms.get('twilio'));
  });

  it('an unknown name or a channel without a registry finds nothing (no throw)', () => {
    expect(lookup('email', 'nope')).toBeUndefined();
    expect(lookup('sms', 'relay')).toBeUndefined();
    expect(lookup('push', undefined)).toBeUndefined();
  });

  it('lists each channel backends, the primary first; none for a channel without a registry', () => {
    expect(lookup.backends!('email')).toEqual(['api', 'relay']);
    expect(lookup.backends!('sms')).toEqual(['twilio']);
    expect(lookup.backends!('push')).toEqual([]);
  });
});
