import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Writes YAML application files into one temp directory, removed by `cleanup()`. */
export function tempYamlFiles(): { write(text: string): string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-config-'));
  let n = 0;
  return {
    write(text: string): string {
      const path = join(dir, `application-${++n}.yaml`);
      writeFileSync(path, text);
      return path;
    },
    cleanup(): void {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
