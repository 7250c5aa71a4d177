/**
 * DeliveryObserver: the one hook through which something outside the delivery area learns how
 * deliveries end (the monitor reporter turns it into SLO samples). The area knows nothing of who
 * listens; an observer that throws is logged and ignored, never a failure of the delivery.
 */
import type { Channel, FailureKind } from './driver';

/** A delivery that reached a final status through one of this process's attempts. */
export interface DeliveryOutcome {
  deliveryId: string;
  channel: Channel;
  /** The backend of the attempt that ended it. */
  backend: string;
  status: 'sent' | 'failed';
  /** Why it failed; null when sent. */
  failure: FailureKind | null;
  /** Attempts it took, this one included. */
  attempts: number;
  /** When the pipeline accepted it (the record's creation). */
  acceptedAt: Date;
  /** When the final attempt was recorded. */
  finishedAt: Date;
  /** finishedAt - acceptedAt in milliseconds (0 when the clocks disagree). */
  latencyMs: number;
}

/** Told about every delivery outcome; must return quickly and never await the network. */
export interface DeliveryObserver {
  onOutcome(outcome: DeliveryOutcome): void;
}
