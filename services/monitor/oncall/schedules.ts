/**
 * On-call schedules (issue 28): who is on call on a schedule at any instant, computed from the config
 * alone (`monitor.oncall.schedules`, schedules-config.ts). Nothing is stored: every replica answers
 * the same for the same instant.
 *
 * The rules (README.md, "Schedules"):
 * - The rotation's hand-offs are at `hand_off` local time in the schedule's zone, on `hand_off_day`,
 *   every `length_weeks` weeks, from the first `hand_off_day` on or after `start`; users[0] has the
 *   first turn, then each in order, round and round. Before the first hand-off nobody is on call
 *   from the rotation. A hand-off in the spring-forward gap happens at the first instant after it;
 *   one in the autumn repeat at its first occurrence (shared/time/zone.ts), so a turn across a DST
 *   change lasts 167 or 169 hours.
 * - Overrides cut into the rotation: inside an override its user is on call; where overrides overlap
 *   the later in the list wins. A "shift" is a piece of the timeline with one source: one turn of the
 *   rotation, or one override, between the boundaries where the source changes.
 * - An empty rotation gives nobody (null) outside overrides.
 */
import { InvalidArgumentError, NotFoundError } from '../../../shared/errors';
import { WEEKDAYS } from '../../../shared/monitoring/alerts/tiers';
import { cutText } from '../../../shared/text/cut';
import { isoWeekday, localInstant, parseClockTime, wallTime } from '../../../shared/time/zone';
import type { OnCallLookup, OnCallShift } from './ports';
import type { OnCallScheduleConfig } from './schedules-config';

const DAY = 86_400_000;
/** Hand-off instants each schedule remembers (the turns around the instants asked about lately). */
const MAX_CACHED_HAND_OFFS = 256;

/** A schedule with who is on call now and next (ListSchedules, the status page). */
export interface ScheduleStatus {
  name: string;
  timeZone: string;
  current: OnCallShift | null;
  next: OnCallShift | null;
}

interface Override {
  user: string;
  start: number;
  end: number;
}

/** A piece of the timeline: [start, end) with one user from one source. */
interface Piece {
  user: string;
  start: number;
  end: number;
  override: boolean;
}

/** One schedule, compiled from its config: its hand-offs and pieces as plain arithmetic. */
class CompiledSchedule {
  readonly name: string;
  readonly timeZone: string;
  private readonly users: readonly string[];
  private readonly overrides: readonly Override[];
  /** The first hand-off's local date, as ms on the UTC scale (shared/time/zone.ts "wall" time). */
  private readonly firstDay: number;
  private readonly periodDays: number;
  private readonly handOffHour: number;
  private readonly handOffMinute: number;
  /** Hand-off k -> its instant: the zone arithmetic is the costly part and the answers never change. */
  private readonly handOffs = new Map<number, number>();

  constructor(config: OnCallScheduleConfig) {
    this.name = config.name;
    this.timeZone = config.time_zone;
    this.users = [...config.rotation.users];
    this.overrides = config.overrides.map((o) => ({
      user: o.user,
      start: o.start.getTime(),
      end: o.end.getTime(),
    }));
    const minutes = parseClockTime(config.rotation.hand_off)!;
    this.handOffHour = Math.floor(minutes / 60);
    this.handOffMinute = minutes % 60;
    this.periodDays = 7 * config.rotation.length_weeks;
    const { year, month, day } = config.rotation.start;
    const start = Date.UTC(year, month - 1, day);
    const wanted = WEEKDAYS.indexOf(config.rotation.hand_off_day) + 1;
    this.firstDay = start + ((wanted - isoWeekday(start) + 7) % 7) * DAY;
  }

  /** The instant of the rotation's hand-off `k` (0: the first). */
  private handOff(k: number): number {
    const cached = this.handOffs.get(k);
    if (cached !== undefined) return cached;
    const d = new Date(this.firstDay + k * this.periodDays * DAY);
    const instant = localInstant(
      d.getUTCFullYear(),
      d.getUTCMonth() + 1,
      d.getUTCDate(),
      this.handOffHour,
      this.handOffMinute,
      this.timeZone,
    ).getTime();
    if (this.handOffs.size >= MAX_CACHED_HAND_OFFS) this.handOffs.delete(this.handOffs.keys().next().value!);
    this.handOffs.set(k, instant);
    return instant;
  }

  /** The turn at instant `t` (hand-off k <= t < hand-off k+1); -1 before the first hand-off. */
  private turnAt(t: number): number {
    const w = wallTime(this.timeZone, t);
    const days = (Date.UTC(w.year, w.month - 1, w.day) - this.firstDay) / DAY;
    let k = Math.floor(days / this.periodDays);
    // The local date gives the turn to within one; the hand-off's own instant settles it.
    while (k > 0 && this.handOff(k) > t) k--;
    if (k <= 0) {
      if (this.handOff(0) > t) return -1;
      k = 0;
    }
    while (this.handOff(k + 1) <= t) k++;
    return k;
  }

  /** The piece of the timeline holding `t`; null when nobody is on call at `t`. */
  pieceAt(t: number): Piece | null {
    const overrides = this.overrides;
    let winner = -1;
    for (let i = overrides.length - 1; i >= 0; i--) {
      const o = overrides[i]!;
      if (o.start <= t && t < o.end) {
        winner = i;
        break;
      }
    }
    if (winner >= 0) {
      // A later override ending before `t` handed back to this one; one starting after `t` takes over.
      const o = overrides[winner]!;
      let start = o.start;
      let end = o.end;
      for (let j = winner + 1; j < overrides.length; j++) {
        const later = overrides[j]!;
        if (later.end <= t && later.end > start) start = later.end;
        if (later.start > t && later.start < end) end = later.start;
      }
      return { user: o.user, start, end, override: true };
    }
    if (this.users.length === 0) return null;
    const k = this.turnAt(t);
    if (k < 0) return null;
    // No override holds `t`: the turn runs from the last override end before `t` to the next start.
    let start = this.handOff(k);
    let end = this.handOff(k + 1);
    for (const o of overrides) {
      if (o.end <= t && o.end > start) start = o.end;
      if (o.start > t && o.start < end) end = o.start;
    }
    return { user: this.users[k % this.users.length]!, start, end, override: false };
  }

  /** The piece after the one holding `t` (or, when nobody is on call at `t`, the first one after `t`). */
  pieceAfter(t: number): Piece | null {
    let from = this.pieceAt(t)?.end ?? t;
    // Each round moves to a later override start or the rotation's first hand-off: bounded.
    for (let round = 0; round <= this.overrides.length + 1; round++) {
      const piece = from === t ? null : this.pieceAt(from);
      if (piece) return piece;
      let nextStart = Infinity;
      for (const o of this.overrides) if (o.start > from && o.start < nextStart) nextStart = o.start;
      if (this.users.length > 0) {
        const first = this.handOff(0);
        if (first > from && first < nextStart) nextStart = first;
      }
      if (nextStart === Infinity) return null;
      from = nextStart;
    }
    return null;
  }
}

/** The configured on-call schedules; implements {@link OnCallLookup}. Pure: no clock, no storage. */
export class Schedules implements OnCallLookup {
  private readonly schedules: ReadonlyMap<string, CompiledSchedule>;

  /** @param config the validated `monitor.oncall.schedules` (names unique). */
  constructor(config: readonly OnCallScheduleConfig[]) {
    this.schedules = new Map(config.map((c) => [c.name, new CompiledSchedule(c)]));
  }

  current(schedule: string, at: Date): OnCallShift | null {
    const s = this.get(schedule);
    return shift(s.name, s.pieceAt(instant(at)));
  }

  next(schedule: string, at: Date): OnCallShift | null {
    const s = this.get(schedule);
    return shift(s.name, s.pieceAfter(instant(at)));
  }

  names(): string[] {
    return [...this.schedules.keys()];
  }

  /** The schedule's time zone. Unknown schedule: NotFoundError. */
  timeZone(schedule: string): string {
    return this.get(schedule).timeZone;
  }

  /** Every schedule in config order with who is on call at `at` and who is next. */
  statuses(at: Date): ScheduleStatus[] {
    const t = instant(at);
    return [...this.schedules.values()].map((s) => ({
      name: s.name,
      timeZone: s.timeZone,
      current: shift(s.name, s.pieceAt(t)),
      next: shift(s.name, s.pieceAfter(t)),
    }));
  }

  private get(schedule: string): CompiledSchedule {
    const s = this.schedules.get(schedule);
    if (!s) throw new NotFoundError(`no on-call schedule named ${JSON.stringify(cutText(schedule, 64))}`);
    return s;
  }
}

/** The instant of `at`; InvalidArgumentError naming `at` for an invalid Date. */
function instant(at: Date): number {
  const t = at.getTime();
  if (Number.isNaN(t)) throw new InvalidArgumentError('at is not a valid time', 'at');
  return t;
}

function shift(schedule: string, piece: Piece | null): OnCallShift | null {
  if (!piece) return null;
  return {
    schedule,
    userId: piece.user,
    start: new Date(piece.start),
    end: new Date(piece.end),
    override: piece.override,
  };
}
