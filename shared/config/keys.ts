/** Naming of config keys: the dotted key shown to people and the environment variable that sets it. */

/** A path of keys and list indexes below a section, e.g. `['mailer', 'backends', 0, 'driver']`. */
export type ConfigPath = readonly (string | number)[];

/** `notification` + `['mailer','backends',0,'driver']` -> `notification.mailer.backends[0].driver`. */
export function configKey(section: string, path: readonly PropertyKey[]): string {
  let key = section;
  for (const seg of path) key += typeof seg === 'number' ? `[${seg}]` : `.${String(seg)}`;
  return key;
}

/** `notification` + `['mailer','backends',0,'driver']` -> `SVC_NOTIFICATION__MAILER__BACKENDS__0__DRIVER`. */
export function envVarName(section: string, path: readonly PropertyKey[]): string {
  return [`SVC_${section.toUpperCase()}`, ...path.map((p) => String(p).toUpperCase())].join('__');
}
