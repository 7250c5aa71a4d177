/**
 * A stand-in svc.monitor.v1.MonitorService for the reporter tests: a real grpc-js server speaking
 * the contract (RegisterSlo, RecordSloSamples, CaptureException; every other RPC UNIMPLEMENTED) that
 * records what it receives and the `authorization` metadata of every call. `stop()` / `start()` keep
 * the port, so a service configured with it meets a monitor that is down, then up.
 */
import * as grpc from '@grpc/grpc-js';
import { create } from '@bufbuild/protobuf';
import {
  CaptureExceptionResponseSchema,
  MonitorService,
  RecordSloSamplesResponseSchema,
  RegisterSloResponseSchema,
  RegisterRatioSloResponseSchema,
  type RegisterRatioSloRequest,
  type RatioSlo,
  type CaptureExceptionRequest,
  type RecordSloSamplesRequest,
  type RegisterSloRequest,
  type Slo,
} from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import { createGrpcServerDefinition } from '../../../shared/rpc/grpc-adapter';

/** What the stand-in has received. */
export interface StandInMonitor {
  port: number;
  address: string;
  /** Registered SLOs by name. */
  slos: Map<string, Slo>;
  /** RegisterSlo calls answered ALREADY_EXISTS. */
  duplicateRegistrations: string[];
  /** Registered ratio SLOs by name (RegisterRatioSlo). */
  ratioSlos: Map<string, RatioSlo>;
  /** Events per ratio SLO, in arrival order (RecordSloSamples with `slo`). */
  events: Map<string, Array<{ good: number; bad: number; atMs: number }>>;
  /** While true, RegisterRatioSlo answers UNIMPLEMENTED (a monitor older than ratio SLOs). */
  noRatioSlos: boolean;
  /** Recorded values per metric, in arrival order. */
  samples: Map<string, number[]>;
  /** RecordSloSamples calls (one per batch). */
  sampleCalls: number;
  exceptions: CaptureExceptionRequest[];
  /** The `authorization` metadata of every call ('' when absent). */
  authorizations: string[];
  /** While true, calls are read but never answered (a monitor that hangs). */
  hang: boolean;
  start(): Promise<void>;
  stop(): Promise<void>;
}

type Unary<Req> = (call: grpc.ServerUnaryCall<Req, unknown>, callback: grpc.sendUnaryData<unknown>) => void;

/** A stand-in that is down until `start()`; `port` 0 picks a free one at the first start. */
export function createStandInMonitor(port = 0): StandInMonitor {
  let server: grpc.Server | undefined;
  const monitor: StandInMonitor = {
    port,
    address: '',
    slos: new Map(),
    ratioSlos: new Map(),
    events: new Map(),
    noRatioSlos: false,
    duplicateRegistrations: [],
    samples: new Map(),
    sampleCalls: 0,
    exceptions: [],
    authorizations: [],
    hang: false,
    async start() {
      const s = new grpc.Server();
      const seen = (call: grpc.ServerUnaryCall<unknown, unknown>) =>
        monitor.authorizations.push(String(call.metadata.get('authorization')[0] ?? ''));
      // A held call is never answered: the client's deadline ends it.
      const held = () => monitor.hang;
      const registerSlo: Unary<RegisterSloRequest> = (call, cb) => {
        seen(call);
        if (held()) return;
        const slo = call.request.slo!;
        if (monitor.slos.has(slo.name)) {
          monitor.duplicateRegistrations.push(slo.name);
          cb({ code: grpc.status.ALREADY_EXISTS, details: `SLO ${slo.name} exists` });
          return;
        }
        monitor.slos.set(slo.name, slo);
        cb(null, create(RegisterSloResponseSchema, { slo }));
      };
      const registerRatioSlo: Unary<RegisterRatioSloRequest> = (call, cb) => {
        seen(call);
        if (held()) return;
        if (monitor.noRatioSlos) return cb({ code: grpc.status.UNIMPLEMENTED, details: 'unknown method' });
        const slo = call.request.slo!;
        if (!monitor.ratioSlos.has(slo.name)) monitor.ratioSlos.set(slo.name, slo);
        cb(null, create(RegisterRatioSloResponseSchema, { slo }));
      };
      const recordSloSamples: Unary<RecordSloSamplesRequest> = (call, cb) => {
        seen(call);
        if (held()) return;
        if (call.request.slo !== '') {
          // Like the monitor: events of an SLO it does not have are NOT_FOUND.
          if (!monitor.ratioSlos.has(call.request.slo))
            return cb({ code: grpc.status.NOT_FOUND, details: `no ratio SLO is named ${call.request.slo}` });
          const list = monitor.events.get(call.request.slo) ?? [];
          let accepted = 0;
          for (const e of call.request.events) {
            list.push({
              good: Number(e.good),
              bad: Number(e.bad),
              atMs: e.time ? Number(e.time.seconds) * 1000 : -1,
            });
            accepted += Number(e.good + e.bad);
          }
          monitor.events.set(call.request.slo, list);
          return cb(null, create(RecordSloSamplesResponseSchema, { accepted }));
        }
        monitor.sampleCalls++;
        const list = monitor.samples.get(call.request.metric) ?? [];
        list.push(...call.request.valuesMs);
        monitor.samples.set(call.request.metric, list);
        // Like the monitor: samples are kept only for a metric some registered SLO reads.
        const read = [...monitor.slos.values()].some((s) => s.metric === call.request.metric);
        cb(
          null,
          create(RecordSloSamplesResponseSchema, { accepted: read ? call.request.valuesMs.length : 0 }),
        );
      };
      const captureException: Unary<CaptureExceptionRequest> = (call, cb) => {
        seen(call);
        if (held()) return;
        monitor.exceptions.push(call.request);
        cb(null, create(CaptureExceptionResponseSchema, { eventId: 'e'.repeat(32), forwarded: false }));
      };
      s.addService(createGrpcServerDefinition(MonitorService), {
        registerSlo,
        registerRatioSlo,
        recordSloSamples,
        captureException,
      } as grpc.UntypedServiceImplementation);
      monitor.port = await new Promise<number>((resolve, reject) =>
        s.bindAsync(`127.0.0.1:${monitor.port}`, grpc.ServerCredentials.createInsecure(), (err, p) =>
          err ? reject(err) : resolve(p),
        ),
      );
      monitor.address = `127.0.0.1:${monitor.port}`;
      server = s;
    },
    async stop() {
      server?.forceShutdown();
      server = undefined;
    },
  };
  return monitor;
}

/** A stand-in listening on a free port. */
export async function startStandInMonitor(): Promise<StandInMonitor> {
  const m = createStandInMonitor();
  await m.start();
  return m;
}
