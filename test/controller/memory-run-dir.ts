import type { RunDirFiles } from '../../src/controller/files/exchange';

/** A run directory in a Map (path relative to the run dir → content), for controller steps without files. */
export class MemoryRunDir implements RunDirFiles {
  readonly files = new Map<string, string>();

  read(path: string): string | undefined {
    return this.files.get(path);
  }

  list(dir: string): string[] {
    const names = new Set<string>();
    for (const path of this.files.keys()) {
      if (path.startsWith(`${dir}/`)) names.add(path.slice(dir.length + 1).split('/')[0]!);
    }
    return [...names];
  }

  write(path: string, text: string): void {
    this.files.set(path, text);
  }

  remove(path: string): void {
    this.files.delete(path);
  }

  json(path: string): unknown {
    const text = this.files.get(path);
    if (text === undefined) throw new Error(`${path} does not exist`);
    return JSON.parse(text);
  }
}
