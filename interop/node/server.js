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
  constructor(kit) {
    this.kit = kit;
    this.conversations = new Map(); // conversationId -> {events, checkpoints}
    this.eventIds = new Set();
  }

  state(conversationId) {
    return this.kit.arrayState(this.conversations.get(conversationId), false, (id) => this.eventIds.has(id));
  }

  write(conversationId, step) { // one thread, no await: one atomic step
    const change = step(this.state(conversationId));
    this.conversations.set(conversationId, this.kit.applied(this.conversations.get(conversationId), change));
    for (const envelope of change.events) this.eventIds.add(envelope.eventId);
  }

  view(conversationId, look) { return look(this.state(conversationId)); }
}

import(pathToFileURL(kit).href).then(
  (kit) => kit.serve({ name: 'convledger-node', capabilities: ['ledger'], newStore: () => new MemoryStorage(kit) }),
  (error) => {
    process.stderr.write(`interop/node/server.js: the kit is not built (${kit}): ` +
      `run "cd interop/typescript && npm ci && npm run build" first\n${error}\n`);
    process.exit(3);
  },
);
