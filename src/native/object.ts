/**
 * A BPF object file in two phases, as in cilium/ebpf: `open` reads the ELF so the caller can inspect and
 * adjust it (globals, map sizes, pin paths, maps to reuse), then `load` verifies and creates the kernel
 * objects off the event loop. The object owns the fds of its maps and programs until `close`.
 */
import { existsSync } from 'node:fs';
import { type Codec, encode } from './codec';
import { BpfMap } from './map';
import { native, type NativeMapSpec } from './binding';
import { BpfProgram } from './program';

export interface OpenOptions {
  /**
   * Directory where maps declared with LIBBPF_PIN_BY_NAME are pinned, and reused from when compatible.
   * Without it nothing is pinned (libbpf would otherwise pin into the shared /sys/fs/bpf).
   */
  pinRoot?: string;
}

export class BpfObject {
  private loaded = false;
  private closed = false;
  private readonly programCache = new Map<string, BpfProgram>();

  private constructor(
    private readonly id: number,
    readonly path: string,
  ) {}

  static open(path: string, options: OpenOptions = {}): BpfObject {
    const obj = new BpfObject(native().objectOpen(path, options.pinRoot ?? null), path);
    if (options.pinRoot === undefined) for (const m of obj.maps()) if (m.pinPath !== null) obj.setPinPath(m.name, null);
    return obj;
  }

  /** Opens, lets `configure` adjust the object, and loads it; closes it again if any step fails. */
  static async load(path: string, options: OpenOptions = {}, configure: (obj: BpfObject) => void = () => {}): Promise<BpfObject> {
    const obj = BpfObject.open(path, options);
    try {
      configure(obj);
      await obj.load();
      return obj;
    } catch (err) {
      obj.close();
      throw err;
    }
  }

  private get handle(): number {
    if (this.closed) throw new Error(`BPF object ${this.path} is closed`);
    return this.id;
  }

  maps(): NativeMapSpec[] {
    return native().objectMaps(this.handle);
  }

  programs(): { name: string; section: string; type: number; fd: number }[] {
    return native().objectPrograms(this.handle);
  }

  /** Global variables (`const volatile` settings among them) with their section offsets and sizes. */
  globals(): { name: string; map: string; offset: number; size: number; readOnly: boolean }[] {
    return native().objectGlobals(this.handle);
  }

  /** Sets a global variable before load; its size must match the codec's. */
  setGlobal<T>(name: string, codec: Codec<T>, value: T): void {
    native().objectSetGlobal(this.handle, name, encode(codec, value));
  }

  setMaxEntries(map: string, maxEntries: number): void {
    native().objectSetMaxEntries(this.handle, map, maxEntries);
  }

  /** Pins `map` at `path` at load (reusing a compatible map already pinned there); null: no pinning. */
  setPinPath(map: string, path: string | null): void {
    native().objectSetPinPath(this.handle, map, path);
  }

  /**
   * Before load: the maps pinned where this object pins one that it could not reuse (another type, key
   * or value size, max_entries or flags: another build's layout). Load fails on them until they are moved
   * away (src/dataplane/ebpf/map-upgrade.ts sets them aside and carries their state over).
   */
  incompatiblePins(): { name: string; pinPath: string }[] {
    const found: { name: string; pinPath: string }[] = [];
    for (const spec of this.maps()) {
      if (spec.pinPath === null || !existsSync(spec.pinPath)) continue;
      const fd = native().objGet(spec.pinPath);
      let pinned;
      try {
        pinned = native().mapInfo(fd);
      } finally {
        native().closeFd(fd);
      }
      const same =
        pinned.type === spec.type &&
        pinned.keySize === spec.keySize &&
        pinned.valueSize === spec.valueSize &&
        pinned.maxEntries === spec.maxEntries &&
        pinned.flags === spec.flags;
      if (!same) found.push({ name: spec.name, pinPath: spec.pinPath });
    }
    return found;
  }

  /** Makes the object use an existing map instead of creating one. */
  reuseMap(name: string, map: BpfMap<unknown, unknown>): void {
    native().objectReuseMapFd(this.handle, name, map.fd);
  }

  async load(): Promise<void> {
    await native().objectLoad(this.handle);
    this.loaded = true;
  }

  private requireLoaded(what: string): void {
    if (!this.loaded) throw new Error(`BPF object ${this.path} is not loaded: load it before using ${what}`);
  }

  /** A map of the loaded object through codecs; its fd belongs to the object. */
  map<K, V>(name: string, key: Codec<K>, value: Codec<V>): BpfMap<K, V> {
    this.requireLoaded(`map '${name}'`);
    const spec = this.maps().find((m) => m.name === name);
    if (!spec)
      throw new Error(
        `BPF object ${this.path} has no map '${name}'; it has: ${this.maps()
          .map((m) => m.name)
          .join(', ')}`,
      );
    return BpfMap.fromFd(spec.fd, key, value, false);
  }

  program(name: string): BpfProgram {
    this.requireLoaded(`program '${name}'`);
    const cached = this.programCache.get(name);
    if (cached) return cached;
    const spec = this.programs().find((p) => p.name === name);
    if (!spec)
      throw new Error(
        `BPF object ${this.path} has no program '${name}'; it has: ${this.programs()
          .map((p) => p.name)
          .join(', ')}`,
      );
    const prog = new BpfProgram(spec.name, spec.fd, spec.type, false);
    this.programCache.set(name, prog);
    return prog;
  }

  /** Releases the object's fds. Pinned maps and attached programs stay in the kernel. */
  close(): void {
    if (this.closed) return;
    native().objectClose(this.id);
    this.closed = true;
  }
}
