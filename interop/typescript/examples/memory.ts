#!/usr/bin/env node
// An in-memory store on the kit: capabilities ledger, purge, projections, spills and search.
// Everything below is storage; the kit checks arguments, orders refusals, pages, folds
// projections, checks and authorizes spills, finds hits, builds archives and bundles and serves
// the protocol. A conversation's
// spill objects live in its `Conversation` (arrayState and applied keep them), so a purge that
// drops the conversation drops them too (SPL-032).
import { type Change, type Conversation, type Storage, type StoredState, applied, arrayState, serve } from '@convledger/kit';

class MemoryStorage implements Storage {
  private readonly conversations = new Map<string, Conversation>();
  private readonly eventIds = new Set<string>();
  private readonly tombstones = new Set<string>();

  private state(conversationId: string): StoredState {
    const taken = (eventId: string): boolean => this.eventIds.has(eventId);
    return arrayState(this.conversations.get(conversationId), this.tombstones.has(conversationId), taken);
  }

  // One thread and no await: each call below is one atomic step.
  write(conversationId: string, step: (state: StoredState) => Change): void {
    const change = step(this.state(conversationId));
    this.conversations.set(conversationId, applied(this.conversations.get(conversationId), change));
    for (const envelope of change.events) this.eventIds.add(envelope.eventId);
  }

  view<T>(conversationId: string, look: (state: StoredState) => T): T {
    return look(this.state(conversationId));
  }

  viewAll<T>(look: (conversationIds: readonly string[], state: (conversationId: string) => StoredState) => T): T {
    return look([...this.conversations.keys()], (conversationId) => this.state(conversationId));
  }

  purge(conversationId: string): boolean {
    for (const envelope of this.conversations.get(conversationId)?.events ?? []) this.eventIds.delete(envelope.eventId);
    this.conversations.delete(conversationId);
    if (this.tombstones.has(conversationId)) return false;
    this.tombstones.add(conversationId);
    return true;
  }
}

await serve({ name: 'convledger-ts-memory', capabilities: ['ledger', 'purge', 'projections', 'spills', 'search'], newStore: () => new MemoryStorage() });
