/**
 * Text the alert store cannot keep (a NUL: PostgreSQL's text and jsonb refuse it; a lone surrogate:
 * no UTF-8 form) is the caller's bad input: INVALID_ARGUMENT naming the field, not the INTERNAL of a
 * failed INSERT (found by a black-box probe: SendAlert with "t\u0000" over Connect JSON answered 500).
 * The monitor runs on its embedded database here, as it does by default. Text in every language,
 * emoji included, is kept as it was sent.
 */
import { Code, createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { AlertService, MatchOperator } from '../../../shared/gen/svc/monitor/v1/alerts_pb';
import { isStorableText } from '../../../shared/text/cut';
import { startMonitorApp, type RunningMonitorApp } from '../../support/monitor-app';
import { connectError } from '../../support/call-errors';

const NUL = '\u0000';
const LONE = '\ud800';
const WORLD = 'مرحبا 世界 🚀👩‍💻';

let m: RunningMonitorApp;
let alerts: Client<typeof AlertService>;

beforeAll(async () => {
  m = await startMonitorApp({ database: { store_backend: 'database', data_dir: ':memory:' } });
  alerts = createClient(AlertService, createConnectTransport({ baseUrl: m.baseUrl, httpVersion: '1.1' }));
});

afterAll(async () => {
  await m?.close();
});

/** SendAlert as an outsider sends it: Connect JSON by plain HTTP. */
async function sendAlertJson(
  body: Record<string, unknown>,
): Promise<{ status: number; json: { code?: string; message?: string } }> {
  const res = await fetch(`${m.baseUrl}/svc.monitor.v1.MonitorService/SendAlert`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as { code?: string; message?: string } };
}

test('isStorableText: a NUL or a lone surrogate anywhere is not storable; every language and emoji is', () => {
  expect(isStorableText(WORLD)).toBe(true);
  expect(isStorableText('')).toBe(true);
  expect(isStorableText(`a${NUL}`)).toBe(false);
  expect(isStorableText(`${LONE}a`)).toBe(false);
  expect(isStorableText('a\udc00')).toBe(false);
  // An emoji cut in half at its end is a lone high surrogate.
  expect(isStorableText('🚀'.slice(0, 1))).toBe(false);
});

test('SendAlert with a NUL in any text field or context entry is INVALID_ARGUMENT naming the field', async () => {
  const base = { title: 't', message: 'm', severity: 'high', sourceService: 's' };
  for (const [body, field] of [
    [{ ...base, title: `t${NUL}` }, 'title'],
    [{ ...base, message: `m${NUL}` }, 'message'],
    [{ ...base, sourceService: `s${NUL}` }, 'source_service'],
    [{ ...base, context: { [`k${NUL}`]: 'v' } }, 'context'],
    [{ ...base, context: { k: `v${NUL}` } }, 'context'],
    [{ ...base, dedupKey: `d${NUL}` }, 'dedup_key'],
  ] as const) {
    const { status, json } = await sendAlertJson(body);
    expect({ field, status, code: json.code }).toEqual({ field, status: 400, code: 'invalid_argument' });
    expect(json.message).toContain(field);
    expect(json.message).not.toMatch(/SQL|jsonb|INSERT|UPDATE|encoding/i);
  }
  // The same alert in any language is kept as sent.
  const ok = await sendAlertJson({ ...base, title: WORLD, context: { [WORLD]: WORLD } });
  expect(ok.status).toBe(200);
  const listed = await alerts.listAlerts({});
  expect(listed.alerts.map((a) => a.alert?.title)).toContain(WORLD);
});

test('acknowledging, silencing: a NUL in who, note, comment or a matcher value is INVALID_ARGUMENT', async () => {
  const { status } = await sendAlertJson({ title: 'to ack', message: 'm', severity: 'high' });
  expect(status).toBe(200);
  const open = (await alerts.listAlerts({})).alerts.find((a) => a.alert?.title === 'to ack')!.alert!;
  const endsAt = timestampFromMs(Date.now() + 60_000);
  const matchers = [{ name: 'a', operator: MatchOperator.EQUAL, value: 'b' }];
  const cases: Array<[Promise<unknown>, string]> = [
    [alerts.acknowledgeAlert({ alertId: open.id, acknowledgedBy: `bob${NUL}` }), 'acknowledged_by'],
    [alerts.acknowledgeAlert({ alertId: open.id, acknowledgedBy: 'bob', note: `n${NUL}` }), 'note'],
    [alerts.createSilence({ matchers, createdBy: `x${NUL}`, endsAt }), 'created_by'],
    [alerts.createSilence({ matchers, createdBy: 'x', comment: `c${NUL}`, endsAt }), 'comment'],
    [
      alerts.createSilence({
        matchers: [{ name: 'a', operator: MatchOperator.EQUAL, value: `b${NUL}` }],
        createdBy: 'x',
        endsAt,
      }),
      'matchers',
    ],
  ];
  for (const [call, field] of cases) {
    const err = await connectError(call);
    expect({ field, code: err.code }).toEqual({ field, code: Code.InvalidArgument });
    expect(err.rawMessage).toContain(field);
  }
  // Valid text in every language goes through.
  await alerts.acknowledgeAlert({ alertId: open.id, acknowledgedBy: WORLD, note: WORLD });
  const silence = await alerts.createSilence({
    matchers: [{ name: 'a', operator: MatchOperator.EQUAL, value: WORLD }],
    createdBy: WORLD,
    comment: WORLD,
    endsAt,
  });
  expect(silence.silence?.comment).toBe(WORLD);
});
