/**
 * The cap rules both ledgers apply (issue 26, `notify.caps`): the cap text and the decision over a
 * user's recent takes of one channel. A take at `t` counts in the sliding window (now - per, now],
 * so it stops counting exactly `per` after it was made.
 */
import type { CapConfig } from '../config';
import type { CapDecision, TimedChannel } from '../timing';

const UNITS = [
  ['d', 86_400],
  ['h', 3_600],
  ['m', 60],
] as const;

/** The cap as shown on a throttled line: `sms 3/1h` (`per` in its largest whole unit). */
export function capText(cap: CapConfig): string {
  const unit = UNITS.find(([, seconds]) => cap.per % seconds === 0);
  const per = unit ? `${cap.per / unit[1]}${unit[0]}` : `${cap.per}s`;
  return `${cap.channel} ${cap.limit}/${per}`;
}

/** The caps of each channel, from the config list (order kept). */
export function capsByChannel(caps: readonly CapConfig[]): Map<TimedChannel, CapConfig[]> {
  const byChannel = new Map<TimedChannel, CapConfig[]>();
  for (const cap of caps) byChannel.set(cap.channel, [...(byChannel.get(cap.channel) ?? []), cap]);
  return byChannel;
}

/** How many of a channel's newest takes a decision needs: its largest limit. */
export function takesNeeded(caps: readonly CapConfig[]): number {
  return Math.max(0, ...caps.map((c) => c.limit));
}

/** The longest window of a channel's caps, in seconds (older takes never count again). */
export function longestWindow(caps: readonly CapConfig[]): number {
  return Math.max(0, ...caps.map((c) => c.per));
}

/**
 * Whether one more take fits every cap of the channel at `nowUs`, given the channel's takes newest
 * first (`newestFirstUs`, microseconds since the epoch; at least the newest `takesNeeded` of them).
 * When it does not: the cap that frees last (the first in config order among equals) and the
 * earliest instant at which every cap has a free slot (rounded up to the millisecond).
 */
export function decide(
  caps: readonly CapConfig[],
  newestFirstUs: readonly number[],
  nowUs: number,
): CapDecision {
  let blocking: { cap: CapConfig; freeAtUs: number } | undefined;
  for (const cap of caps) {
    const perUs = cap.per * 1_000_000;
    const inWindow = newestFirstUs.filter((t) => t > nowUs - perUs).length;
    if (inWindow < cap.limit) continue;
    // Free once the limit-th newest take leaves the window: then at most limit - 1 remain.
    const freeAtUs = newestFirstUs[cap.limit - 1]! + perUs;
    if (!blocking || freeAtUs > blocking.freeAtUs) blocking = { cap, freeAtUs };
  }
  if (!blocking) return { taken: true };
  return {
    taken: false,
    cap: capText(blocking.cap),
    nextFreeAt: new Date(Math.ceil(blocking.freeAtUs / 1000)),
  };
}
