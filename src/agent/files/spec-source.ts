/**
 * The spec source of the files control plane (the standalone lab): the spec file the controller writes.
 * The port it implements, SpecSource, is the agent's (../control-plane-port.ts).
 */
import { createHash } from 'node:crypto';
import { type FSWatcher, statSync, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import { parseJsonDocument, readTextFile } from '../../api/document';
import { StateError } from '../../errors';
import type { Logger } from '../../log';
import type { SpecDocument, SpecSource } from '../control-plane-port';

/** What changes whenever a file's content can have: undefined when there is no file (or it cannot be read). */
function statStamp(path: string): string | undefined {
  try {
    const st = statSync(path, { bigint: true });
    return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
  } catch {
    return undefined;
  }
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * The document of a file's text. Its version is the text's sha256, not the text: a spec of 100,000
 * NatMappings is megabytes, which an idle agent would hold twice (here and as the version it last read).
 * The text itself is held only until parsed; a later parse reads the file again.
 */
function fileDocument(path: string, text: string): SpecDocument {
  const sha256 = (t: string) => createHash('sha256').update(t).digest('hex');
  const version = sha256(text);
  let unparsed: string | undefined = text;
  return {
    version,
    parse: () => {
      let now = unparsed;
      unparsed = undefined;
      if (now === undefined) {
        // Read again, the file must still be this version: a newer one is the next read's document.
        now = readTextFile(path) ?? '';
        if (sha256(now) !== version) throw new StateError(`${path} changed since it was read; the next read takes the new one`);
      }
      return parseJsonDocument(now, path);
    },
  };
}

/**
 * The spec file, written by the standalone controller (temp file + rename). fs.watch is on its
 * directory: a rename over the file would lose a watch on the old inode. The directory may appear only
 * after the agent starts, and a failed watch is dropped: `watch` re-establishes it from the timer.
 */
export class FileSpecSource implements SpecSource {
  private watcher?: FSWatcher;
  /** The document last read, and the file's stamp when it was. */
  private last?: { stamp: string; document: SpecDocument };
  private polling = false;
  readonly where: Record<string, string>;

  constructor(
    private readonly path: string,
    private readonly log: Logger,
  ) {
    this.where = { specFile: path };
  }

  read(): SpecDocument | undefined {
    // A spec of 100,000 NatMappings is megabytes: read again only when the file's inode, size or times
    // changed (the controller renames a new file over it; an edit in place changes its times).
    const stamp = statStamp(this.path);
    if (stamp !== undefined && stamp === this.last?.stamp) return this.last.document;
    this.last = undefined;
    const text = readTextFile(this.path);
    if (text === undefined) return undefined;
    const document = fileDocument(this.path, text);
    if (stamp !== undefined) this.last = { stamp, document };
    return document;
  }

  watch(onChange: () => void): void {
    if (this.watcher) return;
    const dir = dirname(this.path);
    try {
      this.watcher = watch(dir, (_event, file) => {
        if (file === null || file === basename(this.path)) onChange();
      });
      this.watcher.on('error', (err) => {
        this.log.warn({ dir, error: message(err) }, 'spec directory watch failed; polling until it is back');
        this.close();
      });
      if (this.polling) this.log.info({ dir }, 'watching the spec directory');
      this.polling = false;
    } catch (err) {
      if (!this.polling) this.log.warn({ dir, error: message(err) }, 'cannot watch the spec directory yet; polling every interval');
      this.polling = true;
    }
  }

  ready(): Promise<void> {
    return Promise.resolve();
  }

  close(): void {
    this.watcher?.close();
    this.watcher = undefined;
  }
}
