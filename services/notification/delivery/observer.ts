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
  /**
   * The full recipient of a single-recipient delivery (an SMS number, a device token), so an
   * in-process observer can act on it (the composition root forgets a device token a provider
   * reported unregistered); absent for an email and once retention erased it. Never log or report it.
   */
  recipient?: string;
}

/** Told about every delivery outcome; must return quickly and never await the network. */
export interface DeliveryObserver {
  onOutcome(outcome: DeliveryOutcome): void;
}

/**
 * One observer that tells each of `observers` (the undefined ones skipped) in turn; one that throws
 * does not keep the next from hearing it (the first error is thrown after all were told).
 */
export function allObservers(...observers: (DeliveryObserver | undefined)[]): DeliveryObserver {
  const present = observers.filter((o): o is DeliveryObserver => o !== undefined);
  return {
    onOutcome(outcome) {
      let failure: { err: unknown } | undefined;
      for (const o of present) {
        try {
          o.onOutcome(outcome);
        } catch (err) {
          failure ??= { err };
        }
      }
      if (failure) throw failure.err;
    },
  };
}
