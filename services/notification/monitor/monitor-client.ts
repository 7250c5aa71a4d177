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
  RegisterSloRequestSchema,
} from '../../../shared/gen/svc/monitor/v1/monitor_pb';
import { createGrpcServiceDefinition } from '../../../shared/rpc/grpc-adapter';
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

  /** True when the monitor refused the request itself (INVALID_ARGUMENT): retrying cannot help. */
  get refused(): boolean {
    return this.code === grpc.status.INVALID_ARGUMENT;
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
  close(): void;
}

type Callback = (err: grpc.ServiceError | null, res: unknown) => void;
type UnaryMethod = (req: unknown, md: grpc.Metadata, opts: grpc.CallOptions, cb: Callback) => void;

/** The grpc-js implementation of {@link MonitorSink}. */
export class MonitorClient implements MonitorSink {
  private readonly client: grpc.Client & Record<string, UnaryMethod>;
  private readonly timeoutMs: number;
  private readonly token: string | undefined;

  constructor(
    config: Pick<MonitorReporterConfig, 'tls' | 'timeout_ms' | 'api_token'> & { grpc_address: string },
  ) {
    const Ctor = grpc.makeGenericClientConstructor(
      createGrpcServiceDefinition(MonitorService),
      MonitorService.name,
    );
    const credentials = config.tls ? grpc.credentials.createSsl() : grpc.credentials.createInsecure();
    this.client = new Ctor(config.grpc_address, credentials) as unknown as grpc.Client &
      Record<string, UnaryMethod>;
    this.timeoutMs = config.timeout_ms;
    this.token = config.api_token;
  }

  async recordSloSamples(metric: string, valuesMs: readonly number[]): Promise<number> {
    const res = (await this.call(
      'recordSloSamples',
      create(RecordSloSamplesRequestSchema, { metric, valuesMs: [...valuesMs] }),
    )) as { accepted?: number } | undefined;
    return res?.accepted ?? 0;
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
      await this.call('registerSlo', request);
      return 'registered';
    } catch (err) {
      if (err instanceof MonitorCallError && err.code === grpc.status.ALREADY_EXISTS) return 'exists';
      throw err;
    }
  }

  async captureException(report: ExceptionReport, sourceService: string): Promise<void> {
    await this.call(
      'captureException',
      create(CaptureExceptionRequestSchema, {
        type: report.type,
        message: report.message,
        stacktrace: report.stacktrace,
        sourceService,
        traceId: report.traceId,
        time: timestampFromDate(report.time),
      }),
    );
  }

  close(): void {
    this.client.close();
  }

  private call(method: string, request: unknown): Promise<unknown> {
    const md = new grpc.Metadata();
    if (this.token) md.set('authorization', `Bearer ${this.token}`);
    const fn = this.client[method]!;
    return new Promise((resolve, reject) => {
      fn.call(this.client, request, md, { deadline: Date.now() + this.timeoutMs }, (err, res) => {
        if (err) reject(new MonitorCallError(err.code, method, err.details));
        else resolve(res);
      });
    });
  }
}
