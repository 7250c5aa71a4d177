/**
 * MonitorClient: the notification service's grpc-js client of svc.monitor.v1.MonitorService, reduced
 * to the three calls the reporter makes. Every call carries the bearer token (when configured) and a
 * deadline of `timeout_ms`; a failure is a {@link MonitorCallError} with the gRPC status code, never
 * the monitor's message text in our logs at more than debug level. No `waitForReady`: while the
 * monitor is down a call fails at once (UNAVAILABLE) instead of queueing inside grpc-js.
 */
import * as grpc from '@grpc/grpc-js';
import { create } from '@bufbuild/protobuf';
import { durationFromMs, timestampFromDate } from '@bufbuild/protobuf/wkt';
import {
  CaptureExceptionRequestSchema,
  MonitorService,
  RecordSloSamplesRequestSchema,
  RegisterRatioSloRequestSchema,
  RegisterSloRequestSchema,
  SloCalendarPeriod,
} from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import type { RatioSloDeclaration } from './default-slos';
import { ConnectError, type Client } from '@connectrpc/connect';
import { createGrpcClient, type GrpcClient } from '../../../shared/rpc/client';
import type { DeclaredSlo, MonitorReporterConfig } from './config';

/** A call to the monitor that failed, with its gRPC status code. */
export class MonitorCallError extends Error {
  constructor(
    readonly code: grpc.status,
    readonly method: string,
    details: string,
  ) {
    super(`${method}: ${grpc.status[code] ?? code}${details ? ` (${details})` : ''}`);
    this.name = 'MonitorCallError';
  }

  /**
   * True when the monitor refused the request itself (INVALID_ARGUMENT), or does not know the RPC
   * (UNIMPLEMENTED: a monitor older than ratio SLOs): retrying cannot help.
   */
  get refused(): boolean {
    return this.code === grpc.status.INVALID_ARGUMENT || this.code === grpc.status.UNIMPLEMENTED;
  }
}

/** One captured exception as it is sent (already scrubbed). */
export interface ExceptionReport {
  type: string;
  message: string;
  stacktrace: string;
  traceId: string;
  time: Date;
}

/** What the reporter needs from the monitor (a test may pass its own). */
export interface MonitorSink {
  /** Records values (ms) of one metric. */
  /** Records samples; resolves how many the monitor kept (0 when no SLO of its reads the metric). */
  recordSloSamples(metric: string, valuesMs: readonly number[]): Promise<number>;
  /** Registers one SLO; resolves `exists` when the monitor already has one of that name. */
  registerSlo(slo: DeclaredSlo): Promise<'registered' | 'exists'>;
  captureException(report: ExceptionReport, sourceService: string): Promise<void>;
  /** Registers one ratio SLO; `exists` when the monitor has it (the same, or another under its name). */
  registerRatioSlo(slo: RatioSloDeclaration): Promise<'registered' | 'exists'>;
  /** Records events of a ratio SLO (at most 10,000 entries); resolves how many events were kept. */
  recordSloEvents(slo: string, events: readonly SloEventEntry[]): Promise<number>;
  close(): void;
}

/** Good and bad events of one second (epoch ms of its start). */
export interface SloEventEntry {
  atMs: number;
  good: number;
  bad: number;
}

/** The grpc-js implementation of {@link MonitorSink}. */
export class MonitorClient implements MonitorSink {
  private readonly rpc: GrpcClient<typeof MonitorService>;

  constructor(
    config: Pick<MonitorReporterConfig, 'tls' | 'timeout_ms' | 'api_token'> & { grpc_address: string },
  ) {
    // The one outbound gRPC stack (shared/rpc/client.ts): token and deadline on every call.
    this.rpc = createGrpcClient(MonitorService, {
      address: config.grpc_address,
      tls: config.tls,
      token: config.api_token,
      timeoutMs: config.timeout_ms,
    });
  }

  async recordSloSamples(metric: string, valuesMs: readonly number[]): Promise<number> {
    const res = await this.call('recordSloSamples', (c) =>
      c.recordSloSamples(create(RecordSloSamplesRequestSchema, { metric, valuesMs: [...valuesMs] })),
    );
    return res.accepted;
  }

  async registerSlo(slo: DeclaredSlo): Promise<'registered' | 'exists'> {
    const request = create(RegisterSloRequestSchema, {
      slo: {
        name: slo.name,
        metric: slo.metric,
        percentile: slo.percentile,
        thresholdMs: slo.threshold_ms,
        window: durationFromMs(Math.round(slo.window * 1000)),
        burnRateThreshold: slo.burn_rate_threshold,
        description: slo.description,
        tier: slo.tier,
        owner: slo.owner,
        runbookUrl: slo.runbook_url ?? '',
      },
    });
    try {
      await this.call('registerSlo', (c) => c.registerSlo(request));
      return 'registered';
    } catch (err) {
      if (err instanceof MonitorCallError && err.code === grpc.status.ALREADY_EXISTS) return 'exists';
      throw err;
    }
  }

  async registerRatioSlo(slo: RatioSloDeclaration): Promise<'registered' | 'exists'> {
    const request = create(RegisterRatioSloRequestSchema, {
      slo: {
        name: slo.name,
        target: slo.target,
        period:
          slo.period.kind === 'rolling'
            ? { kind: { case: 'rolling', value: durationFromMs(slo.period.seconds * 1000) } }
            : { kind: { case: 'calendar', value: SloCalendarPeriod.MONTH }, timeZone: slo.period.timeZone },
        minEvents: BigInt(slo.minEvents),
        description: slo.description,
        tier: slo.tier,
        runbookUrl: slo.runbookUrl ?? '',
      },
    });
    try {
      await this.call('registerRatioSlo', (c) => c.registerRatioSlo(request));
      return 'registered';
    } catch (err) {
      if (err instanceof MonitorCallError && err.code === grpc.status.ALREADY_EXISTS) return 'exists';
      throw err;
    }
  }

  async recordSloEvents(slo: string, events: readonly SloEventEntry[]): Promise<number> {
    const res = await this.call('recordSloSamples', (c) =>
      c.recordSloSamples(
        create(RecordSloSamplesRequestSchema, {
          slo,
          events: events.map((e) => ({
            good: BigInt(e.good),
            bad: BigInt(e.bad),
            time: timestampFromDate(new Date(e.atMs)),
          })),
        }),
      ),
    );
    return res.accepted;
  }

  async captureException(report: ExceptionReport, sourceService: string): Promise<void> {
    await this.call('captureException', (c) =>
      c.captureException(
        create(CaptureExceptionRequestSchema, {
          type: report.type,
          message: report.message,
          stacktrace: report.stacktrace,
          sourceService,
          traceId: report.traceId,
          time: timestampFromDate(report.time),
        }),
      ),
    );
  }

  close(): void {
    this.rpc.close();
  }

  /** One call; a failure becomes a MonitorCallError with the gRPC status code. */
  private async call<R>(
    method: string,
    send: (client: Client<typeof MonitorService>) => Promise<R>,
  ): Promise<R> {
    try {
      return await send(this.rpc.client);
    } catch (err) {
      const e = ConnectError.from(err);
      throw new MonitorCallError(e.code as number as grpc.status, method, e.rawMessage);
    }
  }
}
