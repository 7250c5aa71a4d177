/** The error a service stops with when its configuration is invalid. */
import { DomainError } from '../errors';

/** One problem found while loading config. */
export interface ConfigIssue {
  /** Dotted key, e.g. `notification.mailer.backends[0].driver`. */
  readonly key: string;
  /** What was expected and what was found; never a secret's value. */
  readonly message: string;
  /** Where the value came from: `default`, `file <path>`, `environment variable <NAME>` or `code`. */
  readonly source: string;
  /** The environment variable that sets this key. */
  readonly envVar: string;
}

/** Renders one issue as the line shown to the operator. */
export function formatIssue(issue: ConfigIssue): string {
  const setBy = `environment variable ${issue.envVar}`;
  const where = issue.source === setBy ? setBy : `${issue.source}; ${setBy}`;
  return `${issue.key}: ${issue.message} (from ${where})`;
}

/**
 * Invalid configuration: every issue at once, each naming the key, the source of the value and the
 * environment variable that would set it. A rung of the one error ladder (shared/errors): bad input,
 * whether the loader found it at start or a section was written in code (`configure(...)`).
 */
export class ConfigError extends DomainError {
  readonly code = 'INVALID_ARGUMENT' as const;
  constructor(
    readonly section: string,
    readonly issues: readonly ConfigIssue[],
  ) {
    super(`invalid ${section} configuration:\n${issues.map((i) => `  - ${formatIssue(i)}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}
