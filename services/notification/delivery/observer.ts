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

/**
 * A provider's final word on a delivery it accepted: the receipt that moved the record from SENT (or
 * a status before it: a receipt may overtake the recording of the acceptance) to DELIVERED or
 * UNDELIVERED. Told once per delivery, by the process whose store update made that transition; a
 * duplicate or replayed receipt, or one for a record already final, tells nobody.
 */
export interface DeliveryReceiptOutcome {
  deliveryId: string;
  channel: Channel;
  /** The backend whose verified receipt it was. */
  backend: string;
  status: 'delivered' | 'undelivered';
  /**
   * The receipt's cause, as the channel's webhook classified it (`provider_undelivered`,
   * `recipient_invalid`, `recipient_bounced`, `recipient_unsubscribed`, ...); null when it gave none.
   */
  failure: FailureKind | null;
  /** The provider's own code (Twilio ErrorCode, an SMTP status), when it gave one. */
  providerCode?: string;
  /** When the delivery was recorded SENT; null when the receipt came first. */
  sentAt: Date | null;
  /** When the receipt was recorded (the recorder's clock). */
  receivedAt: Date;
}

/** Told about every delivery outcome; must return quickly and never await the network. */
export interface DeliveryObserver {
  onOutcome(outcome: DeliveryOutcome): void;
  /** Told about every provider receipt that ended a delivery (optional; same rules as onOutcome). */
  onReceipt?(receipt: DeliveryReceiptOutcome): void;
}

/**
 * One observer that tells each of `observers` (the undefined ones skipped) in turn; one that throws
 * does not keep the next from hearing it (the first error is thrown after all were told).
 */
export function allObservers(...observers: (DeliveryObserver | undefined)[]): DeliveryObserver {
  const present = observers.filter((o): o is DeliveryObserver => o !== undefined);
  const tellEach = (tell: (o: DeliveryObserver) => void): void => {
    let failure: { err: unknown } | undefined;
    for (const o of present) {
      try {
        tell(o);
      } catch (err) {
        failure ??= { err };
      }
    }
    if (failure) throw failure.err;
  };
  return {
    onOutcome: (outcome) => tellEach((o) => o.onOutcome(outcome)),
    onReceipt: (receipt) => tellEach((o) => o.onReceipt?.(receipt)),
  };
}
