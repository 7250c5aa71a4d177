/**
 * Per-process CPU accounting for the benchmarks. On a machine shared with other work, wall-clock
 * ratios move with the load; the CPU each process spends per unit of work does not (much), and on a
 * machine with N cores the sum of it over the processes of one path bounds that path's throughput.
 *
 * The bench process is read with `process.cpuUsage()`, other processes from `/proc/<pid>/stat`
 * (utime + stime, in clock ticks: 10 ms on Linux, so a round must be long enough to mean something).
 * A PostgreSQL server is read as its postmaster plus its live backends plus the backends it has
 * reaped (the postmaster's cutime/cstime), so connections that come and go are counted too.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';

/** Linux clock ticks per second (`getconf CLK_TCK`): 100 on every platform Node runs on Linux. */
const TICKS_PER_SECOND = 100;

/** One process (or group of processes) whose CPU is accounted. */
export interface CpuSource {
  name: string;
  /** Cumulative CPU time in milliseconds, or undefined when it cannot be read (process gone). */
  read(): number | undefined;
}

/** The fields of /proc/<pid>/stat after the command name (which may hold spaces and parens). */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

// Indexes into statFields (field numbers of proc(5) minus 3): ppid 4, utime 14, stime 15, cutime 16,
// cstime 17.
const PPID = 1;
const UTIME = 11;
const STIME = 12;
const CUTIME = 13;
const CSTIME = 14;

function ticksToMs(ticks: number): number {
  return (ticks * 1000) / TICKS_PER_SECOND;
}

/** The bench process itself (all its threads). */
export function selfSource(name = 'bench'): CpuSource {
  return {
    name,
    read() {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1000;
    },
  };
}

/** Another process by pid (all its threads; not its children). */
export function pidSource(name: string, pid: number | undefined): CpuSource {
  return {
    name,
    read() {
      if (pid === undefined) return undefined;
      const f = statFields(pid);
      return f ? ticksToMs(Number(f[UTIME]) + Number(f[STIME])) : undefined;
    },
  };
}

/**
 * A process and all its children, live (their utime + stime) and reaped (its cutime + cstime): a
 * PostgreSQL postmaster and its backends.
 */
export function processTreeSource(name: string, pid: number | undefined): CpuSource {
  return {
    name,
    read() {
      if (pid === undefined) return undefined;
      const root = statFields(pid);
      if (!root) return undefined;
      let ticks = Number(root[UTIME]) + Number(root[STIME]) + Number(root[CUTIME]) + Number(root[CSTIME]);
      for (const entry of readdirSync('/proc')) {
        if (!/^\d+$/.test(entry)) continue;
        const f = statFields(Number(entry));
        if (f && Number(f[PPID]) === pid) ticks += Number(f[UTIME]) + Number(f[STIME]);
      }
      return ticksToMs(ticks);
    },
  };
}

/** CPU-ms each source spent between two readings. */
export type CpuSpent = Record<string, number>;

/** Reads every source now; `spent()` answers what each spent since. */
export function cpuMark(sources: CpuSource[]): { spent(): CpuSpent } {
  const start = sources.map((s) => s.read());
  return {
    spent() {
      const out: CpuSpent = {};
      sources.forEach((s, i) => {
        const a = start[i];
        const b = s.read();
        if (a !== undefined && b !== undefined) out[s.name] = b - a;
      });
      return out;
    },
  };
}

/** Sums CPU spent over rounds, with the units of work done, per side of a comparison. */
export class CpuTally {
  private readonly totals = new Map<string, { units: number; ms: CpuSpent }>();

  /** Runs `round` (which returns what it measures) between two readings of `sources`. */
  async measure<T>(side: string, units: number, sources: CpuSource[], round: () => Promise<T>): Promise<T> {
    const mark = cpuMark(sources);
    const result = await round();
    this.add(side, units, mark.spent());
    return result;
  }

  add(side: string, units: number, spent: CpuSpent): void {
    const t = this.totals.get(side) ?? { units: 0, ms: {} };
    t.units += units;
    for (const [name, ms] of Object.entries(spent)) t.ms[name] = (t.ms[name] ?? 0) + ms;
    this.totals.set(side, t);
  }

  /** CPU-ms per unit per process (and `total`), per side. */
  perUnit(): Record<string, Record<string, number>> {
    const out: Record<string, Record<string, number>> = {};
    for (const [side, t] of this.totals) {
      const row: Record<string, number> = {};
      let total = 0;
      for (const [name, ms] of Object.entries(t.ms)) {
        row[name] = ms / t.units;
        total += ms;
      }
      row.total = total / t.units;
      out[side] = row;
    }
    return out;
  }

  /**
   * The baseline's total CPU-ms per unit over the candidate's (all processes of each side): the
   * throughput ratio the two would reach if the cores were the only limit. On this 2-core machine the
   * wall-clock ratio of a row follows it within about 0.1 while moving 0.1-0.4 between runs of the same
   * commit, so each row prints it as the steadier reading (README, "The CPU ratio"). Undefined
   * when a side was not measured.
   */
  cpuRatio(candidate: string, baseline: string): number | undefined {
    const all = this.perUnit();
    const c = all[candidate]?.total;
    const b = all[baseline]?.total;
    return c === undefined || b === undefined || c <= 0 ? undefined : b / c;
  }

  /** `cpuRatio` as a detail line under a row, or nothing when it cannot be computed. */
  formatCpuRatio(candidate: string, baseline: string): string[] {
    const r = this.cpuRatio(candidate, baseline);
    return r === undefined
      ? []
      : [`CPU ratio (${baseline} CPU-ms per unit / ${candidate}'s, all processes): ${r.toFixed(2)}`];
  }

  /** One line per side, e.g. `service: bench 0.41 + notification 1.20 + ... = 2.1 CPU-ms/email`. */
  format(unit: string): string[] {
    return Object.entries(this.perUnit()).map(([side, row]) => {
      const parts = Object.entries(row)
        .filter(([name]) => name !== 'total')
        .map(([name, v]) => `${name} ${v.toFixed(3)}`);
      return `${side}: ${parts.join(' + ')} = ${row.total!.toFixed(3)} CPU-ms/${unit}`;
    });
  }
}

/**
 * The postmaster's pid of the PostgreSQL server behind `url` when it runs on this machine (its
 * data directory's postmaster.pid is readable), else undefined: its CPU is then not accounted.
 */
export async function postmasterPid(url: string): Promise<number | undefined> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ dir: string }>(
      "SELECT setting AS dir FROM pg_settings WHERE name = 'data_directory'",
    );
    const pid = Number(readFileSync(join(rows[0]!.dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  } finally {
    await client.end();
  }
}
