#!/usr/bin/env node
// A store on the kit that persists: capabilities ledger, persistence, purge, projections, spills
// and search, and openStore for crash runs (chapter DUR). Its data is one append-only file of JSON
// lines, `log.jsonl`, in a directory: each line one committed change (the envelopes, checkpoints
// and spill objects, their bytes in base64, of an append, an import, a catch-up, a put or a
// delete of a spill) or one purge, fsync'ed before the reply (WIR-042); an object and its event
// are one line, so a kill keeps both or neither (DUR-007). A lock file serializes the processes
// that share the directory (WIR-041); each operation first reads the lines other processes added.
import { closeSync, existsSync, fstatSync, fsyncSync, ftruncateSync, linkSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Change, type Conversation, type SpillMetadata, type Storage, type StoredState, applied, arrayState, serve } from '@convledger/kit';

type Kept = { readonly metadata: SpillMetadata; readonly base64: string };
type Line = { readonly write: string; readonly change: Change; readonly kept?: Kept[] } | { readonly purge: string };

const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * The directory's lock: a file holding its owner's pid, made whole in a file of its own and then
 * linked to its name, so that a kill never leaves a lock without an owner to test.
 */
function lock(path: string): () => void {
  const mine = `${path}.${process.pid}`;
  for (;;) {
    writeFileSync(mine, String(process.pid));
    try {
      linkSync(mine, path);
      unlinkSync(mine);
      return () => unlinkSync(path);
    } catch (error) {
      unlinkSync(mine);
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    let owner = 0;
    try { owner = Number(readFileSync(path, 'utf8')); } catch { continue; }
    if (owner > 0 && !alive(owner)) {
      try { unlinkSync(path); } catch { /* another process removed it first */ }
      continue;
    }
    Atomics.wait(pause, 0, 0, 1);
  }
}

function alive(pid: number): boolean {
  try { process.kill(pid, 0); return true; } catch (error) { return (error as NodeJS.ErrnoException).code === 'EPERM'; }
}

class FileStorage implements Storage {
  private readonly fd: number;
  private offset = 0; // the bytes of log.jsonl read so far, every one of them a complete line
  private readonly conversations = new Map<string, Conversation>();
  private readonly eventIds = new Set<string>();
  private readonly tombstones = new Set<string>();

  constructor(private readonly dir: string) {
    const path = join(dir, 'log.jsonl');
    const created = !existsSync(path);
    this.fd = openSync(path, 'a+');
    if (created) { const d = openSync(dir, 'r'); fsyncSync(d); closeSync(d); } // the file's name is durable too
  }

  /** Run `body` holding the directory's lock, after reading what other processes wrote. */
  private locked<T>(body: () => T): T {
    const release = lock(join(this.dir, 'lock'));
    try {
      const size = fstatSync(this.fd).size;
      if (size > this.offset) {
        const bytes = Buffer.alloc(size - this.offset);
        readSync(this.fd, bytes, 0, bytes.length, this.offset);
        const end = bytes.lastIndexOf(0x0a) + 1; // a line without its newline is a torn write: ignored
        for (const text of bytes.subarray(0, end).toString('utf8').split('\n')) if (text) this.apply(JSON.parse(text) as Line);
        this.offset += end;
      }
      return body();
    } finally {
      release();
    }
  }

  private apply(line: Line): void {
    if ('purge' in line) {
      for (const envelope of this.conversations.get(line.purge)?.events ?? []) this.eventIds.delete(envelope.eventId);
      this.conversations.delete(line.purge);
      this.tombstones.add(line.purge);
      return;
    }
    const spills = line.kept?.map((o) => ({ metadata: o.metadata, data: new Uint8Array(Buffer.from(o.base64, 'base64')) }));
    const change = spills === undefined ? line.change : { ...line.change, spills };
    this.conversations.set(line.write, applied(this.conversations.get(line.write), change));
    for (const envelope of change.events) this.eventIds.add(envelope.eventId);
  }

  private state(conversationId: string): StoredState {
    const taken = (eventId: string): boolean => this.eventIds.has(eventId);
    return arrayState(this.conversations.get(conversationId), this.tombstones.has(conversationId), taken);
  }

  /** Append one line durably (cutting a torn tail first), then apply it. */
  private commit(line: Line): void {
    const bytes = Buffer.from(`${JSON.stringify(line)}\n`, 'utf8');
    ftruncateSync(this.fd, this.offset);
    writeSync(this.fd, bytes, 0, bytes.length, this.offset);
    fsyncSync(this.fd);
    this.offset += bytes.length;
    this.apply(line);
  }

  write(conversationId: string, step: (state: StoredState) => Change): void {
    this.locked(() => {
      const change = step(this.state(conversationId));
      if (change.events.length === 0 && change.checkpoints.length === 0) return;
      const kept = change.spills?.map((o) => ({ metadata: o.metadata, base64: Buffer.from(o.data).toString('base64') }));
      this.commit({ write: conversationId, change: { ...change, spills: undefined }, kept });
    });
  }

  view<T>(conversationId: string, look: (state: StoredState) => T): T {
    return this.locked(() => look(this.state(conversationId)));
  }

  viewAll<T>(look: (conversationIds: readonly string[], state: (conversationId: string) => StoredState) => T): T {
    return this.locked(() => look([...this.conversations.keys()], (conversationId) => this.state(conversationId)));
  }

  purge(conversationId: string): boolean {
    return this.locked(() => {
      const newly = !this.tombstones.has(conversationId);
      this.commit({ purge: conversationId });
      return newly;
    });
  }

  reopen(): Storage {
    this.close();
    return new FileStorage(this.dir);
  }

  close(): void {
    closeSync(this.fd);
  }
}

// newStore: a fresh directory per store, removed when the server exits.
const made: string[] = [];
process.on('exit', () => { for (const dir of made) rmSync(dir, { recursive: true, force: true }); });

await serve({
  name: 'convledger-ts-file',
  capabilities: ['ledger', 'persistence', 'purge', 'projections', 'spills', 'search'],
  newStore: () => { const dir = mkdtempSync(join(tmpdir(), 'convledger-ts-')); made.push(dir); return new FileStorage(dir); },
  openStore: (location) => new FileStorage(location),
});
