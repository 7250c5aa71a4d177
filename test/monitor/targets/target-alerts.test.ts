import type { AlertDispatcherProtocol } from '../../../shared/monitoring/alerts/dispatcher';
import {
  MAX_PENDING_TARGET_ALERTS,
  TargetAlertQueue,
  targetAlert,
} from '../../../services/monitor/targets/target-alerts';
import type { TargetState } from '../../../services/monitor/targets/target-state';
import { captureLogger } from '../../shared/monitoring/helpers';

const DOWN_STATE: TargetState = {
  name: 'notification',
  grpcAddress: '127.0.0.1:50051',
  httpUrl: 'http://127.0.0.1:8080/health',
  up: false,
  lastProbeAt: new Date(0),
  lastLatencyMs: 3,
  consecutiveFailures: 2,
  lastChangeAt: null,
  lastError: 'UNAVAILABLE',
};

interface Sent {
  title: string;
  severity: string;
  context: Record<string, unknown>;
}

/** A dispatcher that records alerts, and resolves each only when the test releases it. */
function heldDispatcher(): {
  dispatcher: AlertDispatcherProtocol;
  sent: Sent[];
  release(): void;
  answerAll(): void;
} {
  const sent: Sent[] = [];
  let releases: Array<() => void> = [];
  let answering = false;
  return {
    sent,
    dispatcher: {
      sendAlert: (title, _message, severity, context) => {
        sent.push({ title, severity, context: { ...context } });
        if (answering) return Promise.resolve();
        return new Promise<void>((resolve) => releases.push(resolve));
      },
      sendMetricAlert: () => Promise.resolve(),
    },
    release() {
      const r = releases;
      releases = [];
      r.forEach((f) => f());
    },
    /** From now on every alert is answered at once (the ones waiting too). */
    answerAll() {
      answering = true;
      this.release();
    },
  };
}

describe('target alerts', () => {
  it('a down alert is high, paged (P0_PAGE), and names the target, address, failures and reason', () => {
    const a = targetAlert('down', DOWN_STATE);
    expect(a.severity).toBe('high');
    expect(a.title).toBe('target notification is down');
    expect(a.message).toContain('127.0.0.1:50051');
    expect(a.message).toContain('UNAVAILABLE');
    expect(a.context).toEqual({
      tier: 'P0_PAGE',
      target: 'notification',
      state: 'down',
      grpc_address: '127.0.0.1:50051',
      http_url: 'http://127.0.0.1:8080/health',
      consecutive_failures: 2,
      last_error: 'UNAVAILABLE',
      // The alert lifecycle's key: the recovery resolves this alert (issue 27).
      dedup_key: 'target:notification',
    });
  });

  it('a recovered alert is low and goes the same tier as the page it resolves', () => {
    const a = targetAlert('recovered', { ...DOWN_STATE, up: true, consecutiveFailures: 0 });
    expect(a.severity).toBe('low');
    expect(a.title).toBe('target notification recovered');
    expect(a.context).toMatchObject({ tier: 'P0_PAGE', state: 'recovered', consecutive_failures: 0 });
  });

  it('the queue dispatches one alert at a time, in order', async () => {
    const held = heldDispatcher();
    const queue = new TargetAlertQueue(held.dispatcher, captureLogger().logger);
    queue.push(targetAlert('down', DOWN_STATE));
    queue.push(targetAlert('recovered', DOWN_STATE));
    await new Promise((r) => setImmediate(r));
    expect(held.sent.map((s) => s.context.state)).toEqual(['down']);
    held.release();
    await new Promise((r) => setImmediate(r));
    expect(held.sent.map((s) => s.context.state)).toEqual(['down', 'recovered']);
    held.release();
    await queue.drain(1000);
    expect(queue.size).toBe(0);
  });

  it('drops and logs alerts beyond the bound while the dispatcher hangs, and takes new ones once it answers', async () => {
    const held = heldDispatcher();
    const { logger, lines } = captureLogger();
    const queue = new TargetAlertQueue(held.dispatcher, logger);
    for (let i = 0; i < MAX_PENDING_TARGET_ALERTS; i++)
      expect(queue.push(targetAlert('down', DOWN_STATE))).toBe(true);
    expect(queue.push(targetAlert('recovered', DOWN_STATE))).toBe(false);
    expect(queue.size).toBe(MAX_PENDING_TARGET_ALERTS);
    expect(queue.droppedCount).toBe(1);
    expect(lines.filter((l) => l.event === 'target_alert_dropped')).toHaveLength(1);
    held.answerAll();
    await queue.drain(5000);
    expect(queue.size).toBe(0);
    expect(queue.push(targetAlert('recovered', DOWN_STATE))).toBe(true);
    await queue.drain(5000);
    expect(held.sent).toHaveLength(MAX_PENDING_TARGET_ALERTS + 1);
  });

  it('logs a dispatcher failure and goes on with the next alert', async () => {
    const { logger, lines } = captureLogger();
    const sent: string[] = [];
    const queue = new TargetAlertQueue(
      {
        sendAlert: async (title) => {
          sent.push(title);
          if (sent.length === 1) throw new Error('webhook down');
        },
        sendMetricAlert: async () => undefined,
      },
      logger,
    );
    queue.push(targetAlert('down', DOWN_STATE));
    queue.push(targetAlert('recovered', DOWN_STATE));
    await queue.drain(1000);
    expect(sent).toEqual(['target notification is down', 'target notification recovered']);
    expect(lines.some((l) => l.msg === 'target alert could not be dispatched')).toBe(true);
  });

  it('drain gives up after its timeout while the dispatcher hangs', async () => {
    const held = heldDispatcher();
    const queue = new TargetAlertQueue(held.dispatcher, captureLogger().logger);
    queue.push(targetAlert('down', DOWN_STATE));
    await queue.drain(20);
    expect(queue.size).toBe(1);
    held.release();
  });
});
