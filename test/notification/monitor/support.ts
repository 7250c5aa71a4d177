/**
 * The notification app started in-process for the reporter tests, with its log captured (every
 * line, debug level) so a test can check what was written, and helpers to send an email and read
 * one metric from `/metrics`.
 */
import { Writable } from 'node:stream';
import { createLogger } from '../../../shared/logging/logger';
import { loadNotificationConfig, type NotificationConfigInput } from '../../../services/notification/config';
import { createNotificationApp, type NotificationApp } from '../../../services/notification/app';
import { NotificationService } from '../../../shared/gen/svc/notification/v1/notification_pb';
import { grpcClient, unary, type GenericClient } from '../../support/grpc-clients';

export interface ReportingApp {
  app: NotificationApp;
  baseUrl: string;
  client: GenericClient;
  /** Every log line written so far. */
  logs: string[];
  sendEmail(to?: string): Promise<{ deliveryId: string }>;
  /** The value of one sample line of `/metrics` (`name{labels}`), 0 when absent. */
  metric(series: string): Promise<number>;
  close(): Promise<void>;
}

export async function startReportingApp(overrides: NotificationConfigInput): Promise<ReportingApp> {
  const logs: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      logs.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  const logger = createLogger({ name: 'notification', level: 'debug', format: 'json', destination });
  const config = loadNotificationConfig(
    {
      ...overrides,
      server: { host: '127.0.0.1', grpc_port: 0, http_port: 0, shutdown_drain_ms: 0, ...overrides.server },
      inbox: { store_backend: 'memory', ...overrides.inbox },
    },
    { env: {}, file: null },
  );
  const app = await createNotificationApp(config, logger);
  const ports = await app.start();
  const baseUrl = `http://127.0.0.1:${ports.http}`;
  const client = grpcClient(NotificationService, `127.0.0.1:${ports.grpc}`);
  return {
    app,
    baseUrl,
    client,
    logs,
    async sendEmail(to = 'jane@example.com') {
      const req = { to: [to], subject: 'Hello', text: 'Hi' };
      return (await unary<{ deliveryId: string }>(client, 'sendEmail', req)).response;
    },
    async metric(series: string) {
      const text = await (await fetch(`${baseUrl}/metrics`)).text();
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      return line ? Number(line.slice(series.length + 1)) : 0;
    },
    async close() {
      client.close();
      await app.stop();
    },
  };
}
