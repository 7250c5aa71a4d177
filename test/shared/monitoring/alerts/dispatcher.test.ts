import { alertLogLevel, LoggingAlertDispatcher, metricAlertLogLevel } from '../../../../shared/monitoring';
import { captureLogger } from '../helpers';

describe('LoggingAlertDispatcher', () => {
  it.each([
    ['low', 40],
    ['medium', 40],
    ['high', 50],
    ['critical', 50],
    ['CRITICAL', 50],
    ['something-else', 40],
  ])('logs a %s alert at level %i (low/medium WARNING, high/critical ERROR)', async (severity, level) => {
    const { logger, lines } = captureLogger();
    await new LoggingAlertDispatcher(logger).sendAlert('disk', 'disk almost full', severity, { host: 'a1' });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level,
      msg: 'disk almost full',
      alert: 'disk',
      severity,
      context: { host: 'a1' },
    });
  });

  it('keeps context keys that look like log fields inside context, so they cannot overwrite the line', async () => {
    const { logger, lines } = captureLogger();
    await new LoggingAlertDispatcher(logger).sendAlert('t', 'm', 'low', {
      level: 'x',
      msg: 'forged',
      token: 's3cret',
    });
    expect(lines[0]).toMatchObject({
      level: 40,
      msg: 'm',
      context: { level: 'x', msg: 'forged', token: '[REDACTED]' },
    });
  });

  it('logs a metric alert at WARNING up to twice the threshold and at ERROR above it', async () => {
    const { logger, lines } = captureLogger();
    const d = new LoggingAlertDispatcher(logger);
    await d.sendMetricAlert('queue.depth', 150, 100, { queue: 'email' });
    await d.sendMetricAlert('queue.depth', 200, 100);
    await d.sendMetricAlert('queue.depth', 200.5, 100);
    expect(lines.map((l) => l.level)).toEqual([40, 40, 50]);
    expect(lines[0]).toMatchObject({
      metric: 'queue.depth',
      current_value: 150,
      threshold: 100,
      context: { queue: 'email' },
    });
    expect(lines[1]!.context).toEqual({});
  });

  it('treats any value above a zero threshold as more than 100% over it', () => {
    expect(metricAlertLogLevel(0.1, 0)).toBe('error');
    expect(metricAlertLogLevel(0, 0)).toBe('warn');
    expect(alertLogLevel('High')).toBe('error');
  });
});
