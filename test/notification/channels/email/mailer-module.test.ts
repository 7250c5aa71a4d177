/**
 * MailerModule: registration from config, the primary backend, lookup errors, health checks wired into
 * the shared HealthChecker, close.
 */
import { HealthChecker } from '../../../../shared/monitoring/health/checker';
import { HealthStatus, httpStatusOf } from '../../../../shared/monitoring/health/result';
import { FailedPreconditionError, InvalidArgumentError } from '../../../../shared/errors';
import { HttpApiMailer } from '../../../../services/notification/channels/email/http-api-mailer';
import { MailerModule } from '../../../../services/notification/channels/email/mailer-module';
import { SmtpMailer } from '../../../../services/notification/channels/email/smtp-mailer';
import { attempt, FROM, simpleEmail } from './support';
import { startSmtpPeer, type SmtpPeer } from '../../../support/smtp-peer';

const smtpBackend = (name: string, port: number, primary = false) => ({
  name,
  primary,
  driver: 'smtp' as const,
  from_email: FROM,
  smtp: { host: '127.0.0.1', port, connection_timeout_ms: 1000, greeting_timeout_ms: 1000 },
});
const apiBackend = (name: string, primary = false) => ({
  name,
  primary,
  driver: 'http_api' as const,
  from_email: 'api@sender.example.com',
  http_api: { base_url: 'http://127.0.0.1:1', api_key: 'SG.key' },
});

describe('MailerModule', () => {
  let peer: SmtpPeer;
  const modules: MailerModule[] = [];
  const track = (m: MailerModule) => (modules.push(m), m);

  beforeAll(async () => {
    peer = await startSmtpPeer();
  });
  afterEach(async () => {
    await Promise.all(modules.splice(0).map((m) => m.close()));
  });
  afterAll(async () => {
    await peer.close();
  });

  it('registers every backend by name with its driver', () => {
    const mailers = track(
      MailerModule.configure({ backends: [smtpBackend('relay', peer.port), apiBackend('api')] }),
    );

    expect(mailers.names).toEqual(['relay', 'api']);
    expect(mailers.get('relay')).toBeInstanceOf(SmtpMailer);
    expect(mailers.get('api')).toBeInstanceOf(HttpApiMailer);
    expect(mailers.get('api').fromEmail).toBe('api@sender.example.com');
  });

  it('serves the backend flagged primary for unnamed use', () => {
    const mailers = track(
      MailerModule.configure({ backends: [smtpBackend('relay', peer.port), apiBackend('api', true)] }),
    );

    expect(mailers.primary).toBe('api');
    expect(mailers.get()).toBe(mailers.get('api'));
    expect(mailers.get('')).toBe(mailers.get('api'));
  });

  it('serves the first backend for unnamed use when none is flagged', () => {
    const mailers = track(
      MailerModule.configure({ backends: [apiBackend('api'), smtpBackend('relay', peer.port)] }),
    );

    expect(mailers.get().name).toBe('api');
  });

  it('answers an unknown backend with INVALID_ARGUMENT naming the field', () => {
    const mailers = track(MailerModule.configure({ backends: [apiBackend('api')] }));

    expect(() => mailers.get('nope')).toThrow(InvalidArgumentError);
    expect(() => mailers.get('nope')).toThrow('backend: unknown mailer backend "nope" (configured: api)');
  });

  it('answers FAILED_PRECONDITION when no backend is configured', () => {
    const mailers = track(MailerModule.stub());

    expect(mailers.names).toEqual([]);
    expect(() => mailers.get()).toThrow(FailedPreconditionError);
    expect(() => mailers.get('x')).toThrow('no mailer backend configured');
  });

  it('stub takes a config written in code and sends through it', async () => {
    const mailers = track(
      MailerModule.stub({ backends: [smtpBackend('relay', peer.port)], max_recipients: 7 }),
    );

    const outcome = await mailers.get().send(simpleEmail(), attempt());

    expect(outcome.class).toBe('sent');
    expect(mailers.limits.maxRecipients).toBe(7);
  });

  it('refuses an invalid config section', () => {
    expect(() => MailerModule.configure({ backends: [{ ...apiBackend('a'), http_api: undefined }] })).toThrow(
      /notification\.mailer\.backends\[0\]\.http_api: settings are required when driver is "http_api"/,
    );
  });

  it('names one health check per backend, notifications.mailer.<name>', () => {
    const mailers = track(
      MailerModule.configure({ backends: [smtpBackend('relay', peer.port), apiBackend('api')] }),
    );

    expect(mailers.healthChecks().map((c) => c.name)).toEqual([
      'notifications.mailer.relay',
      'notifications.mailer.api',
    ]);
  });

  it('a failing mailer makes the health report degraded (207), not unhealthy', async () => {
    const mailers = track(
      MailerModule.configure({ backends: [smtpBackend('relay', peer.port), apiBackend('api')] }),
    );
    const checker = new HealthChecker();
    checker.add('notifications.inbox', () => ({ status: 'healthy' }));
    for (const c of mailers.healthChecks()) checker.add(c.name, c.check);

    const report = await checker.runAllWithSummary();

    expect(report.checks['notifications.mailer.relay']!.status).toBe(HealthStatus.HEALTHY);
    expect(report.checks['notifications.mailer.api']!.status).toBe(HealthStatus.DEGRADED);
    expect(report.checks['notifications.mailer.api']!.message).toMatch(
      /^mail API check failed: connection failed/,
    );
    expect(report.status).toBe(HealthStatus.DEGRADED);
    expect(httpStatusOf(report.status)).toBe(207);
    expect(JSON.stringify(report.checks['notifications.mailer.api']!.toDict())).not.toContain('SG.key');
  });

  it('close ends every mailer: a later send is retryable and nothing reaches the peer', async () => {
    const mailers = MailerModule.configure({ backends: [smtpBackend('relay', peer.port)] });
    const before = peer.dataCount;

    await mailers.close();
    const outcome = await mailers.get().send(simpleEmail(), attempt());

    expect(outcome.class).toBe('retryable');
    expect(peer.dataCount).toBe(before);
  });
});
