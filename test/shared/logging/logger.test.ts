import { PassThrough } from 'node:stream';
import { createLogger, resolveLogFormat } from '../../../shared/logging/logger';

function capture() {
  const out = new PassThrough();
  let text = '';
  out.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return { out, text: () => text };
}

const secretLine = {
  config: { server: { api_tokens: ['tok-123-secret'] }, mailer: { smtp: { password: 'pw-456-secret' } } },
  authorization: 'Bearer hdr-789-secret',
};

describe.each(['json', 'pretty'] as const)('the %s log format', (format) => {
  it('redacts secret fields at every level', () => {
    const { out, text } = capture();
    const logger = createLogger({ name: 'svc', format, destination: out });
    logger.info(secretLine, 'effective configuration');
    logger.flush();
    expect(text()).toContain('effective configuration');
    expect(text()).toContain('[REDACTED]');
    for (const secret of ['tok-123-secret', 'pw-456-secret', 'hdr-789-secret'])
      expect(text()).not.toContain(secret);
  });

  it("keeps a database error's values out: detail, params, bindings, a data exception's quoted value", () => {
    const { out, text } = capture();
    const logger = createLogger({ name: 'svc', format, destination: out });
    const err = Object.assign(
      new Error('SELECT $1::int - invalid input syntax for type integer: "שלום 😀 v1"'),
      {
        code: '22P02',
        severity: 'ERROR',
        detail: 'Key (recipient)=(ann@example.com) already exists.',
        params: ['+15550001111'],
        bindings: ['日本-token'],
      },
    );
    logger.error({ err }, 'query failed');
    logger.flush();
    expect(text()).toContain('query failed');
    expect(text()).toContain('22P02');
    for (const value of ['שלום', 'ann@example.com', '+15550001111', '日本-token'])
      expect(text()).not.toContain(value);
  });

  it('hides the credentials of a URL in any field or message', () => {
    const { out, text } = capture();
    const logger = createLogger({ name: 'svc', format, destination: out });
    logger.info(
      {
        target: { http_url: 'http://probe:url-pw-111@host:8080/health' },
        endpoint: 'https://tok-222@otlp.example',
      },
      'probing http://probe:url-pw-333@host/x',
    );
    logger.flush();
    expect(text()).toContain('probing http://probe:[REDACTED]@host/x');
    expect(text()).toContain('host:8080/health');
    for (const secret of ['url-pw-111', 'tok-222', 'url-pw-333']) expect(text()).not.toContain(secret);
  });

  it('hides the credentials of a URL quoted in an error message and stack', () => {
    const { out, text } = capture();
    const logger = createLogger({ name: 'svc', format, destination: out });
    const err = new TypeError(
      'Request cannot be constructed from a URL that includes credentials: http://u:err-pw-444@h/x',
    );
    logger.error({ err }, 'webhook failed');
    logger.flush();
    expect(text()).toContain('TypeError');
    expect(text()).toContain('http://u:[REDACTED]@h/x');
    expect(text()).not.toContain('err-pw-444');
  });
});

describe('log formats', () => {
  it('json writes one parseable object per line with level, time and service', () => {
    const { out, text } = capture();
    createLogger({ name: 'svc', format: 'json', destination: out }).warn({ userId: 'u1' }, 'hello');
    const record = JSON.parse(text().trim()) as Record<string, unknown>;
    expect(record).toMatchObject({ level: 40, service: 'svc', userId: 'u1', msg: 'hello' });
    expect(typeof record.time).toBe('string');
  });

  it('pretty writes a readable line with the level name, the message and the fields, no JSON', () => {
    const { out, text } = capture();
    createLogger({ name: 'svc', format: 'pretty', destination: out }).warn({ userId: 'u1' }, 'hello');
    const line = text().trim();
    expect(line).toMatch(/WARN.*\(svc\): hello/);
    expect(line).toContain('"userId":"u1"');
    expect(() => JSON.parse(line) as unknown).toThrow();
    // Not a terminal: no colour codes.
    expect(line).not.toContain('\u001b[');
  });

  it('auto is pretty for a person (a terminal, or interactive) and JSON for a pipe', () => {
    expect(resolveLogFormat('auto', true)).toBe('pretty');
    expect(resolveLogFormat('auto', false)).toBe('json');
    expect(resolveLogFormat(undefined, false)).toBe('json');
    expect(resolveLogFormat('json', true)).toBe('json');
    expect(resolveLogFormat('pretty', false)).toBe('pretty');
    const { out, text } = capture();
    createLogger({ name: 'svc', destination: out }).info('piped');
    expect(JSON.parse(text().trim())).toMatchObject({ msg: 'piped' });
  });

  it('auto with an interactive reader behind a pipe (npm start) is pretty and coloured', () => {
    const { out, text } = capture();
    createLogger({ name: 'svc', destination: out, interactive: true }).info('for people');
    expect(text()).toContain('for people');
    expect(text()).toContain('\u001b[');
  });
});
