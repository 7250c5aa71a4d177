/**
 * What the fuzzer saw: answers counted by surface and code, and every answer that breaks the rules
 * (a crash, an INTERNAL or 5xx, a rejection without a reason), kept with the input that caused it.
 */
import { atMost, exactly, reported, type Figure } from '../results';

/** One answer that breaks the rules. */
export interface Violation {
  /** Where: `grpc InboxService/Send`, `http POST /admin/notifications`. */
  readonly where: string;
  /** The answer, e.g. `internal: oops`, `500`. */
  readonly answer: string;
  /** The input, shortly described. */
  readonly input: string;
}

/** Counts of one fuzz run. */
export class Tally {
  private readonly bySurface = new Map<string, number>();
  private readonly byCode = new Map<string, number>();
  /** Answers that break the rules: the first `keep` of each kind (place and code) in full. */
  readonly violations: Violation[] = [];
  private readonly kinds = new Map<string, number>();
  private violationCount = 0;
  /** Answers where the server did not answer at all (connection refused or reset, no status). */
  crashes = 0;
  /** INTERNAL / UNKNOWN on RPCs, 5xx (other than 503 on /health) on routes. */
  internal = 0;
  /** Rejections with an empty reason. */
  silent = 0;
  /** Requests sent a second time, alone, after a connection reset (HTTP). */
  retried = 0;

  constructor(private readonly keep = 3) {}

  /** Counts an answer on `surface` with `code` (a Connect code name or an HTTP status). */
  count(surface: string, code: string): void {
    this.bySurface.set(surface, (this.bySurface.get(surface) ?? 0) + 1);
    this.byCode.set(code, (this.byCode.get(code) ?? 0) + 1);
  }

  /**
   * Records a violation (its kind counted by the caller). `kind` groups like violations for the
   * report (default: the place and the code).
   */
  violate(v: Violation, kind = `${v.where} ${v.answer.split(':')[0]}`): void {
    this.violationCount++;
    const seen = this.kinds.get(kind) ?? 0;
    this.kinds.set(kind, seen + 1);
    if (seen < this.keep) this.violations.push(v);
  }

  /** Inputs tried in total. */
  get total(): number {
    let n = 0;
    for (const v of this.bySurface.values()) n += v;
    return n;
  }

  /** The section's figures: inputs per surface, answers by code, and the three held to 0. */
  figures(): Figure[] {
    const sorted = (m: Map<string, number>) => [...m.entries()].sort(([a], [b]) => a.localeCompare(b));
    return [
      reported('inputs tried', this.total),
      ...sorted(this.bySurface).map(([s, n]) => reported(`inputs: ${s}`, n)),
      ...sorted(this.byCode).map(([c, n]) => reported(`answers: ${c}`, n)),
      reported('connection resets, sent again alone', this.retried),
      exactly('crashes (no answer)', this.crashes, 0),
      exactly('INTERNAL / UNKNOWN / 5xx answers', this.internal, 0),
      exactly('rejections without a reason', this.silent, 0),
      atMost('rule violations', this.violationCount, 0),
    ];
  }

  /** The kept violations, one a line, for a failure message. */
  report(): string {
    return this.violations.map((v) => `${v.where}: ${v.answer} <- ${v.input}`).join('\n');
  }
}

/** A seed for fast-check: `FUZZ_SEED` to replay a run, else a fresh one (printed by the caller). */
export function fuzzSeed(): number {
  const given = process.env.FUZZ_SEED;
  return given !== undefined && given !== '' ? Number(given) : Math.floor(Math.random() * 2 ** 31);
}
