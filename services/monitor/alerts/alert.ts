/**
 * The monitor's alert, in the domain's terms: what the AlertHub keeps, watchers and the status page
 * read, and the channels send. The wire `Alert` of svc.monitor.v1 is built from it at the transport
 * (rpc/alert-wire.ts); nothing here knows the generated code.
 */

/** What raised an alert: SendAlert (`generic`), SendMetricAlert (`metric`), or an SLO (`slo`). */
export type AlertKind = 'generic' | 'metric' | 'slo';

/** One raised alert. */
export interface Alert {
  /** A UUID given by the hub. */
  id: string;
  /** Name of the alert rule: the SLO, the metric, else the title. */
  alertName: string;
  kind: AlertKind;
  title: string;
  message: string;
  severity: string;
  /** Context values as strings (numbers and booleans as written, the rest as JSON). */
  context: Record<string, string>;
  /** The service the alert is about (the monitor's own name when the caller named none). */
  sourceService: string;
  /** When it fired, in milliseconds since the epoch. */
  firedAt: number;
  /**
   * Its lifecycle state when it was sent or read (lifecycle.ts): absent on a raised alert (firing);
   * `resolved` on the one resolved notification.
   */
  state?: 'triggered' | 'acknowledged' | 'resolved';
  /** Its dedup key, when the caller gave one. */
  dedupKey?: string;
}
