/** Config loading for both services: see loader.ts for the sources and their precedence. */
export {
  loadConfig,
  parseSectionInCode,
  CONFIG_SECTIONS,
  DEFAULT_CONFIG_FILE,
  outputForcedInteractive,
} from './loader';
export type { ConfigSection, LoadConfigOptions } from './loader';
export { ConfigError, formatIssue } from './errors';
export type { ConfigIssue } from './errors';
export { configKey, envVarName } from './keys';
export type { ConfigPath } from './keys';
export { redactSecrets, isSecretKey, REDACTED } from './redact';
export { differingKeys } from './diff';
export * from './fields';
export * from './server';
