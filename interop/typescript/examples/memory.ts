#!/usr/bin/env node
// An in-memory store on the kit: capabilities ledger and purge. Everything below is storage;
// the kit checks arguments, orders refusals, pages, builds archives and serves the protocol.
import { type Envelope, type Storage, type StoredState, serve } from '@convledger/kit';

class MemoryStorage implements Storage {
  private readonly logs = new Map<string, Envelope[]>();
  private readonly eventIds = new Set<string>();
  private readonly tombstones = new Set<string>();

  write(conversationId: string, step: (state: StoredState) => readonly Envelope[]): void {
    // One thread, no await: the step and the write below are one atomic step.
    const log = this.logs.get(conversationId) ?? [];
    const placed = step({
      head: log.length,
      purged: this.tombstones.has(conversationId),
      taken: (eventId) => this.eventIds.has(eventId),
    });
    this.logs.set(conversationId, [...log, ...placed]);
    for (const envelope of placed) this.eventIds.add(envelope.eventId);
  }

  read(conversationId: string, fromSeq: number, toSeq: number | null, limit: number): readonly Envelope[] {
    const log = this.logs.get(conversationId) ?? [];
    const end = Math.min(toSeq ?? log.length, log.length, fromSeq - 1 + limit);
    return log.slice(fromSeq - 1, end);
  }

  head(conversationId: string): number {
    return this.logs.get(conversationId)?.length ?? 0;
  }

  snapshot(conversationId: string): readonly Envelope[] {
    return this.logs.get(conversationId) ?? [];
  }

  purge(conversationId: string): boolean {
    for (const envelope of this.logs.get(conversationId) ?? []) this.eventIds.delete(envelope.eventId);
    this.logs.delete(conversationId);
    if (this.tombstones.has(conversationId)) return false;
    this.tombstones.add(conversationId);
    return true;
  }
}

await serve({ name: 'convledger-ts-memory', capabilities: ['ledger', 'purge'], newStore: () => new MemoryStorage() });
