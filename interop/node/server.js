#!/usr/bin/env node
// The Node.js server of the wire protocol (spec/wire.md): a ledger-only, in-memory store written
// in plain JavaScript on the TypeScript kit (interop/typescript, @convledger/kit), which does the
// framing, CBOR, argument checks, refusal order, paging and archives. Build the kit first:
//   cd interop/typescript && npm ci && npm run build
// Usage: node interop/node/server.js
'use strict';

const path = require('path');
const { pathToFileURL } = require('url');

const kit = path.join(__dirname, '..', 'typescript', 'dist', 'src', 'index.js');

class MemoryStorage {
  constructor() {
    this.logs = new Map(); // conversationId -> envelopes in seq order
    this.eventIds = new Set();
  }

  write(conversationId, step) { // one thread, no await: one atomic step
    const log = this.logs.get(conversationId) || [];
    const placed = step({ head: log.length, purged: false, taken: (id) => this.eventIds.has(id) });
    this.logs.set(conversationId, log.concat(placed));
    for (const envelope of placed) this.eventIds.add(envelope.eventId);
  }

  read(conversationId, fromSeq, toSeq, limit) {
    const log = this.logs.get(conversationId) || [];
    return log.slice(fromSeq - 1, Math.min(toSeq === null ? log.length : toSeq, fromSeq - 1 + limit));
  }

  head(conversationId) { return (this.logs.get(conversationId) || []).length; }

  snapshot(conversationId) { return this.logs.get(conversationId) || []; }
}

import(pathToFileURL(kit).href).then(
  ({ serve }) => serve({ name: 'convledger-node', capabilities: ['ledger'], newStore: () => new MemoryStorage() }),
  (error) => {
    process.stderr.write(`interop/node/server.js: the kit is not built (${kit}): ` +
      `run "cd interop/typescript && npm ci && npm run build" first\n${error}\n`);
    process.exit(3);
  },
);
