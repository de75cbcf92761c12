// Capability `search` (chapter SRC): the checks of a query (SRC-020 .. SRC-023), the words of an
// event's text (SQL-008) folded as the reference folds them (convledger/words.py, PGS-063), the
// order of hits and the default-deny rule with the client's callback (SRC-003, SRC-010 .. SRC-013).
// Every rule here needs no storage; the storage only shows every conversation in one snapshot.

import { createHash } from 'node:crypto';

import { Asking } from './callback.js';
import { type Envelope, MAX_SAFE, checkText } from './envelope.js';
import { invalid } from './errors.js';
import { hasLoneSurrogate, isObject } from './json.js';
import type { StoredState } from './storage.js';

export const DEFAULT_SEARCH_LIMIT = 20; // SRC-023
export const MAX_SEARCH_LIMIT = 100; // SRC-023
export const MAX_SCOPE = 100; // SRC-012
export const MAX_QUERY_CHARS = 1000; // SRC-022
export const MAX_QUERY_WORDS = 32; // SRC-022
const LONG_WORD = 200; // PGS-063: bytes
const SNIPPET_CHARS = 200; // SRC-002: not normative
/** A word: a run of letters and digits (SRC-020; Python's `[^\W_]+`, approximated by Unicode categories L and N). */
const WORD = /[\p{L}\p{N}]+/gu;
const MARK = /\p{M}/gu;

/** One hit (SRC-001). */
export interface Hit {
  readonly conversationId: string;
  readonly seq: number;
  readonly occurredAt: string;
  readonly snippet: string;
}

/** A word as matched: lower case, NFKD without combining marks, a digest when long (SRC-025, PGS-063). */
export function fold(word: string): string {
  const lower = word.toLowerCase();
  const folded = lower.normalize('NFKD').replace(MARK, '') || lower;
  if (Buffer.byteLength(folded, 'utf8') > LONG_WORD) return `h:${createHash('sha256').update(folded, 'utf8').digest('hex')}`;
  return folded;
}

/** SQL-008: the string values of a payload, in document order. */
export function eventText(payload: unknown): string {
  const found: string[] = [];
  const walk = (value: unknown): void => {
    if (typeof value === 'string') found.push(value);
    else if (Array.isArray(value)) value.forEach(walk);
    else if (isObject(value)) Object.values(value).forEach(walk);
  };
  walk(payload);
  return found.join(' ');
}

/** SRC-020 .. SRC-022: the folded words of a query. */
export function queryWords(query: unknown): string[] {
  if (typeof query !== 'string') throw invalid('query must be a string', 'SRC-022', 'query');
  if ([...query].length > MAX_QUERY_CHARS) throw invalid(`a query has at most ${MAX_QUERY_CHARS} characters`, 'SRC-022', 'query');
  if (hasLoneSurrogate(query)) throw invalid('query contains a lone surrogate', 'SRC-022', 'query');
  const words = query.match(WORD) ?? [];
  if (words.length === 0) throw invalid('a query needs at least one letter or digit', 'SRC-021', 'query');
  if (words.length > MAX_QUERY_WORDS) throw invalid(`a query has at most ${MAX_QUERY_WORDS} words`, 'SRC-022', 'query');
  return words.map(fold);
}

/** SRC-012: null, or at most 100 conversation ids, deduplicated in code-point order. */
export function checkScope(scope: unknown): string[] | null {
  if (scope === null || scope === undefined) return null;
  if (!Array.isArray(scope)) throw invalid('scope is null or an array of conversation ids', 'SRC-012', 'scope');
  if (scope.length > MAX_SCOPE) throw invalid(`a scope names at most ${MAX_SCOPE} conversations`, 'SRC-012', 'scope');
  for (const item of scope as unknown[]) checkText(item, 'scope', 'SRC-012');
  return inCodePointOrder([...new Set(scope as string[])]);
}

/** SRC-023: an integer from 1 to 100. */
export function checkSearchLimit(limit: unknown): number {
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_SEARCH_LIMIT) {
    throw invalid(`limit must be an integer in 1..${MAX_SEARCH_LIMIT}`, 'SRC-023', 'limit');
  }
  return limit;
}

/** Conversation ids in code-point order (their UTF-8 bytes' order, TRN-085). */
export function inCodePointOrder(ids: readonly string[]): string[] {
  return [...ids].sort((a, b) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
}

/** Up to `limit` hits of one conversation, newest first (SRC-001, SRC-003, SRC-025). */
export function hitsOf(state: StoredState, conversationId: string, words: readonly string[], limit: number): Hit[] {
  const events = state.read(1, null, MAX_SAFE);
  const hits: Hit[] = [];
  for (let index = events.length - 1; index >= 0 && hits.length < limit; index -= 1) {
    const envelope = events[index] as Envelope;
    const text = eventText(envelope.payload);
    const held = new Set((text.match(WORD) ?? []).map(fold));
    if (words.every((word) => held.has(word))) {
      hits.push({ conversationId, seq: envelope.seq, occurredAt: envelope.occurredAt, snippet: [...text].slice(0, SNIPPET_CHARS).join('') });
    }
  }
  return hits;
}

/**
 * SRC-010 .. SRC-013: the requester's hits, then, in code-point order, those of each other
 * candidate the client's callback grants (asked once each, never about the requester, only while
 * the page has room and only for a conversation with a hit), `limit` in all.
 */
export function pageOf(own: Hit[], others: readonly (readonly [string, Hit[]])[], limit: number, ask: boolean): Hit[] | Asking {
  const hits = own.slice(0, limit);
  const next = (from: number): Hit[] | Asking => {
    for (let index = from; index < others.length && hits.length < limit; index += 1) {
      const [conversationId, found] = others[index] as readonly [string, Hit[]];
      if (found.length === 0 || !ask) continue;
      return new Asking(conversationId, (granted) => {
        if (granted) hits.push(...found.slice(0, limit - hits.length));
        return next(index + 1);
      });
    }
    return hits;
  };
  return next(0);
}
