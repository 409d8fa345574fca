// Drives `rukh mcp` with the official TypeScript MCP SDK client
// (@modelcontextprotocol/sdk, protocol 2025-11-25 via initialize).
//
//   RUKH_BIN=… RUKH_HOME=… RUKH_EXPECT_TOOLS=N node client.mjs SCENARIO
//
// Runs one scenario against the fixture home that tests/mcp_ts_test.go
// prepares, prints a JSON report on stdout ({"scenario", "ok": true, …})
// and exits 0; on any failed expectation it prints the reason on stderr
// and exits 1. See README.md.
import { execFileSync } from 'node:child_process';
import { isDeepStrictEqual } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';

const PAGE_TOOLS = 32; // invariant I8 (docs/invariants.md): at most 32 tools per page
const NAME = /^[a-z0-9_-]+__[0-9a-f]+$/; // slug "__" fingerprint

class Failure extends Error {}

function expect(cond, message, detail) {
  if (!cond) {
    throw new Failure(detail === undefined ? message : `${message}: ${JSON.stringify(detail)}`);
  }
}

function env(name) {
  const v = process.env[name];
  if (!v) {
    throw new Failure(`the environment variable ${name} is not set`);
  }
  return v;
}

const RUKH_BIN = env('RUKH_BIN');
const RUKH_HOME = env('RUKH_HOME');

// rukh runs the CLI against the same home, as the owner would.
function rukh(...args) {
  return execFileSync(RUKH_BIN, args, {
    env: { ...process.env, RUKH_HOME },
    encoding: 'utf8',
    timeout: 10_000,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

function invocations(n) {
  return JSON.parse(rukh('invocations', 'list', '--json', '-n', String(n)));
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// A session: the SDK client over a spawned `rukh mcp`, plus a record of
// every raw message the server sent and every error the SDK reported
// (a late response to a cancelled request shows up there).
async function connect() {
  const transport = new StdioClientTransport({
    command: RUKH_BIN,
    args: ['mcp'],
    env: { RUKH_HOME },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr.on('data', (chunk) => {
    if (stderr.length < 64 * 1024) stderr += chunk;
  });
  const received = [];
  transport.onmessage = (message) => received.push(message); // Protocol.connect chains this
  // Every tools/list_changed the server sends, and the list the SDK
  // fetched on it (listChanged.tools.autoRefresh).
  const changes = [];
  let onChange = () => {};
  const client = new Client({ name: 'rukh-ts-test', version: '1.0.0' }, {
    listChanged: {
      tools: {
        debounceMs: 0,
        onChanged: (error, tools) => {
          changes.push({ error: error ? String(error) : null, tools: tools ?? [] });
          onChange();
        },
      },
    },
  });
  const errors = [];
  client.onerror = (err) => errors.push(String(err?.message ?? err));
  await client.connect(transport);
  const init = received.find((m) => m.id !== undefined && m.result?.protocolVersion);
  return {
    client,
    received,
    errors,
    protocolVersion: init?.result.protocolVersion,
    capabilities: init?.result.capabilities,
    changes,
    // changed resolves once n notifications were handled.
    changed(n, ms) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Failure(`no tools/list_changed within ${ms} ms (got ${changes.length})`)), ms);
        const check = () => {
          if (changes.length >= n) {
            clearTimeout(timer);
            resolve(changes[n - 1]);
          }
        };
        onChange = check;
        check();
      });
    },
    stderr: () => stderr,
    async close() {
      await client.close();
    },
  };
}

// listAll follows nextCursor to the end and returns the tools with one
// record per page (the cursor that fetched it and the raw result's cache
// fields as they came over the wire).
async function listAll(s) {
  const tools = [];
  const pages = [];
  let cursor;
  for (;;) {
    expect(pages.length < 100, 'listing does not end');
    const before = s.received.length;
    // The first page with "params": {}; the SDK's default listTools()
    // omits params, which the list-default scenario covers.
    const res = await s.client.listTools(cursor === undefined ? {} : { cursor });
    const raw = s.received.slice(before).find((m) => m.result?.tools)?.result ?? {};
    pages.push({ cursor, count: res.tools.length, nextCursor: res.nextCursor, ttlMs: raw.ttlMs, cacheScope: raw.cacheScope });
    tools.push(...res.tools.map((t) => ({ ...t, page: pages.length - 1 })));
    if (res.nextCursor === undefined) break;
    expect(typeof res.nextCursor === 'string' && res.nextCursor !== '', 'an empty nextCursor', res.nextCursor);
    cursor = res.nextCursor;
  }
  return { tools, pages };
}

function byTitle(tools, title) {
  const t = tools.find((x) => x.title === title);
  expect(t, `no listed tool has the title ${title}`, tools.map((x) => x.title));
  return t;
}

// callTool calls a tool so that the SDK also validates structuredContent
// against the tool's outputSchema: the SDK keeps validators only for the
// tools of the last page it listed, so list that page again first.
async function callValidated(s, listing, tool, args, options) {
  const cursor = listing.pages[tool.page].cursor;
  await s.client.listTools(cursor === undefined ? {} : { cursor });
  expect(s.client.getToolOutputValidator(tool.name), `the SDK holds no output validator for ${tool.name}`);
  return s.client.callTool({ name: tool.name, arguments: args }, undefined, options);
}

// envelope checks the shape every tool result shares and returns the
// envelope: structuredContent, the same JSON in the first text block.
function envelope(res) {
  const env = res.structuredContent;
  expect(env && typeof env === 'object', 'no structuredContent', res);
  expect(Array.isArray(res.content) && res.content.length >= 1, 'no content blocks', res);
  expect(res.content[0].type === 'text', 'the first block is not text', res.content[0]);
  let fromText;
  try {
    fromText = JSON.parse(res.content[0].text);
  } catch (err) {
    throw new Failure(`the first text block is not JSON: ${err.message}: ${res.content[0].text}`);
  }
  expect(isDeepStrictEqual(fromText, env), 'the first text block differs from structuredContent', { text: fromText, structuredContent: env });
  expect(typeof env.invocationId === 'string' && env.invocationId.length > 0, 'no invocationId', env);
  const allowed = new Set(['invocationId', 'outcome', 'reason', 'commandResult', 'effects']);
  for (const k of Object.keys(env)) expect(allowed.has(k), `the envelope has an unexpected member ${k}`, env);
  return env;
}

function expectSucceeded(res, what) {
  const env = envelope(res);
  expect(res.isError !== true, `${what}: isError`, res);
  expect(env.outcome === 'succeeded' && env.reason === undefined, `${what}: outcome`, env);
  expect(res.content.length === 1, `${what}: a success has one content block`, res.content);
  return env;
}

function expectRejected(res, reason, what) {
  const env = envelope(res);
  expect(res.isError === true, `${what}: isError is not true`, res);
  expect(env.outcome === 'rejected' && env.reason === reason, `${what}: want rejected/${reason}`, env);
  expect(env.commandResult === undefined, `${what}: a refusal carries a commandResult`, env);
  const message = res.content.slice(1).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
  expect(message.length > 0, `${what}: no text block says what to fix`, res.content);
  return { env, message };
}

// expectUnknownTool awaits a call that must fail with the JSON-RPC error
// for unknown tools and returns the error's message.
async function expectUnknownTool(promise, name, what) {
  let err;
  try {
    const res = await promise;
    throw new Failure(`${what}: a result instead of an error: ${JSON.stringify(res)}`);
  } catch (e) {
    if (e instanceof Failure) throw e;
    err = e;
  }
  expect(err instanceof McpError, `${what}: not an McpError: ${err}`);
  expect(err.code === -32602, `${what}: error code ${err.code}, want -32602 (invalid params)`, err.message);
  expect(err.message.includes(`unknown tool "${name}"`), `${what}: the message does not say unknown tool "${name}"`, err.message);
  return err.message;
}

async function expectListError(promise, text, what) {
  try {
    await promise;
  } catch (err) {
    expect(err instanceof McpError, `${what}: not an McpError: ${err}`);
    expect(err.message.includes(text), `${what}: the message does not say "${text}"`, err.message);
    return err.message;
  }
  throw new Failure(`${what}: a list result instead of an error`);
}

const scenarios = {
  // Every page, in name order, nothing twice, with the cache fields.
  async list(s) {
    const want = Number(env('RUKH_EXPECT_TOOLS'));
    const { tools, pages } = await listAll(s);
    const names = tools.map((t) => t.name);
    expect(tools.length === want, `listed ${tools.length} tools, want ${want}`);
    expect(pages.length === Math.ceil(want / PAGE_TOOLS), `${pages.length} pages for ${want} tools`, pages.map((p) => p.count));
    pages.forEach((p, i) => {
      const full = i < pages.length - 1;
      expect(full ? p.count === PAGE_TOOLS : p.count >= 1 && p.count <= PAGE_TOOLS, `page ${i} holds ${p.count} tools`);
      expect(full === (p.nextCursor !== undefined), `page ${i}: nextCursor ${p.nextCursor === undefined ? 'missing' : 'on the last page'}`);
      // 2025-11-25 has no place for them; when they are sent they must be right.
      if (p.ttlMs !== undefined) expect(p.ttlMs === 0, `page ${i}: ttlMs`, p.ttlMs);
      if (p.cacheScope !== undefined) expect(p.cacheScope === 'private', `page ${i}: cacheScope`, p.cacheScope);
    });
    for (let i = 1; i < names.length; i++) {
      expect(names[i - 1] < names[i], 'not in strict name order', [names[i - 1], names[i]]);
    }
    for (const t of tools) {
      expect(NAME.test(t.name) && t.name.length <= 128, 'a tool name outside [a-z0-9_-]__hex or over 128 characters', t.name);
      expect(t.inputSchema?.type === 'object', `${t.name}: inputSchema is not an object schema`, t.inputSchema);
      expect(t.outputSchema?.type === 'object', `${t.name}: no object outputSchema`, t.outputSchema);
    }
    for (const title of ['Echo', 'Count', 'Read', 'Slow', 'Progress']) byTitle(tools, title);
    await expectListError(s.client.listTools({ cursor: 'not-a-cursor' }), 'list the tools again', 'a forged cursor');
    return {
      tools: tools.length,
      pages: pages.map((p) => p.count),
      cacheFieldsOnTheWire: pages[0].ttlMs !== undefined || pages[0].cacheScope !== undefined,
      ttlMs: pages[0].ttlMs,
      cacheScope: pages[0].cacheScope,
      longestName: Math.max(...names.map((n) => n.length)),
    };
  },

  // The SDK's default listTools() sends tools/list with no params at all
  // (valid JSON-RPC: params are optional for tools/list); it must give the
  // first page, and the session must survive it.
  async 'list-default'(s) {
    const want = Number(env('RUKH_EXPECT_TOOLS'));
    let first;
    try {
      first = await s.client.listTools();
    } catch (err) {
      throw new Failure(`tools/list without params failed: ${err?.message ?? err}`);
    }
    expect(first.tools.length === Math.min(want, PAGE_TOOLS), `the first page holds ${first.tools.length} tools`);
    expect((want > PAGE_TOOLS) === (first.nextCursor !== undefined), 'nextCursor on the first page', first.nextCursor);
    const { tools } = await listAll(s);
    expect(isDeepStrictEqual(first.tools.map((t) => t.name), tools.slice(0, first.tools.length).map((t) => t.name)),
      'the default listTools() and listTools({}) give different first pages');
    return { firstPage: first.tools.length };
  },

  // A structured success, validated by the SDK against the outputSchema.
  async call(s) {
    const listing = await listAll(s);
    const echo = byTitle(listing.tools, 'Echo');
    const res = await callValidated(s, listing, echo, { word: 'hola' });
    const env = expectSucceeded(res, 'echo');
    expect(isDeepStrictEqual(env.commandResult, { kind: 'structured', data: { word: 'hola' } }), 'echo: commandResult', env);
    const quick = byTitle(listing.tools, 'Quick 0');
    const text = expectSucceeded(await s.client.callTool({ name: quick.name }), 'quick');
    expect(isDeepStrictEqual(text.commandResult, { kind: 'text', text: 'ok' }), 'quick: commandResult', text);
    const [inv] = invocations(1);
    expect(inv.id === text.invocationId && inv.transport === 'mcp' && inv.outcome === 'succeeded', 'the invocation record', inv);
    return { envelope: env };
  },

  // Invalid input is a result the agent can repair from.
  async invalid(s) {
    const listing = await listAll(s);
    const count = byTitle(listing.tools, 'Count');
    const cases = [
      { args: { count: 'three' }, names: 'count' },
      { args: { count: 1.5 }, names: 'count' },
      { args: { count: 9 }, names: 'count' },
      { args: { colour: 'red' }, names: 'colour' },
    ];
    const seen = [];
    for (const c of cases) {
      const what = `count ${JSON.stringify(c.args)}`;
      const { env, message } = expectRejected(await callValidated(s, listing, count, c.args), 'invalid_input', what);
      expect(message.includes(c.names), `${what}: the message does not name the property ${c.names}`, message);
      expect(message.includes('"additionalProperties":false'), `${what}: the message does not carry the input schema`, message);
      seen.push({ args: c.args, envelope: env, message: message.split('\n')[0] });
    }
    const ok = expectSucceeded(await s.client.callTool({ name: count.name, arguments: { count: 5 } }), 'count 5');
    return { cases: seen, valid: ok.outcome };
  },

  // The task's allow rules refuse env:prod and permit env:stage.
  async denied(s) {
    const listing = await listAll(s);
    const read = byTitle(listing.tools, 'Read');
    const { env, message } = expectRejected(await callValidated(s, listing, read, { env: 'prod' }), 'denied', 'read prod');
    expect(message.includes('deploy.read'), 'read prod: the message does not name the action', message);
    const [inv] = invocations(1);
    expect(inv.id === env.invocationId && inv.outcome === 'rejected' && inv.reason === 'denied', 'the denied invocation record', inv);
    expectSucceeded(await s.client.callTool({ name: read.name, arguments: { env: 'stage' } }), 'read stage');
    return { envelope: env, message };
  },

  // A name nobody listed: a JSON-RPC error, and nothing runs.
  async unknown(s) {
    await listAll(s);
    const before = invocations(0).length;
    const name = 'nosuch__0123456789abcdef';
    const message = await expectUnknownTool(s.client.callTool({ name }), name, 'an unknown name');
    const empty = await expectUnknownTool(s.client.callTool({ name: '' }), '', 'an empty name');
    expect(invocations(0).length === before, 'an unknown tool was recorded as an invocation');
    return { message, empty };
  },

  // Progress frames of the extension arrive as MCP progress notifications.
  async progress(s) {
    const listing = await listAll(s);
    const tool = byTitle(listing.tools, 'Progress');
    const notes = [];
    const res = await s.client.callTool({ name: tool.name }, undefined, { onprogress: (p) => notes.push(p) });
    const env = expectSucceeded(res, 'progress');
    expect(notes.length >= 1, 'no progress notification arrived before the result');
    expect(notes[0].progress === 1 && notes[0].total === 2 && notes[0].message === 'step', 'the first progress notification', notes[0]);
    for (let i = 1; i < notes.length; i++) expect(notes[i].progress > notes[i - 1].progress, 'progress does not increase', notes);
    expect(isDeepStrictEqual(env.commandResult, { kind: 'text', text: 'done' }), 'progress: commandResult', env);
    return { notifications: notes };
  },

  // An AbortSignal sends notifications/cancelled: the invocation stops and
  // is recorded as cancelled/client_cancelled; no response follows; the
  // session keeps working.
  async cancel(s) {
    const listing = await listAll(s);
    const slow = byTitle(listing.tools, 'Slow');
    const ac = new AbortController();
    const start = Date.now();
    setTimeout(() => ac.abort('the test cancels'), 500);
    try {
      const res = await s.client.callTool({ name: slow.name }, undefined, { signal: ac.signal });
      throw new Failure(`a cancelled call returned a result: ${JSON.stringify(res)}`);
    } catch (err) {
      if (err instanceof Failure) throw err;
      expect(ac.signal.aborted, `the call failed before it was cancelled: ${err}`);
    }
    let inv;
    for (;;) {
      [inv] = invocations(1);
      if (inv?.command === 'ts.tools/slow' && inv.outcome) break;
      expect(Date.now() - start < 10_000, 'the cancelled invocation was not finalized within 10 s', inv);
      await sleep(50);
    }
    const finalized = Date.now() - start;
    expect(inv.outcome === 'cancelled' && inv.reason === 'client_cancelled', 'recorded outcome', inv);
    expect(inv.transport === 'mcp', 'recorded transport', inv);
    const after = expectSucceeded(await s.client.callTool({ name: byTitle(listing.tools, 'Quick 1').name }), 'a call after the cancellation');
    await sleep(300); // a late response to the cancelled request would arrive by now
    const late = s.errors.filter((e) => e.includes('unknown message ID'));
    expect(late.length === 0, 'the server answered the cancelled request', late);
    return { record: { outcome: inv.outcome, reason: inv.reason, transport: inv.transport }, finalizedAfterMs: finalized, next: after.outcome };
  },

  // A name from before `rukh profile apply` is unknown afterwards, exactly
  // like a name nobody listed; the old cursor is refused; a fresh list works.
  async stale(s) {
    const before = await listAll(s);
    const echo = byTitle(before.tools, 'Echo');
    expectSucceeded(await s.client.callTool({ name: echo.name }), 'echo before the change');
    expect(s.capabilities?.tools?.listChanged === true, 'the server does not advertise tools.listChanged', s.capabilities);
    expect(s.changes.length === 0, 'tools/list_changed before any change', s.changes);
    rukh('profile', 'apply', '-f', env('RUKH_NEXT_PROFILE'));
    // Another process published a revision: the server says so, and the
    // SDK lists again on its own (the first page: 32 tools, renamed).
    const change = await s.changed(1, 10_000);
    expect(change.error === null, 'refreshing the list on tools/list_changed failed', change);
    const oldNames = new Set(before.tools.map((t) => t.name));
    expect(change.tools.length === PAGE_TOOLS && change.tools.every((t) => !oldNames.has(t.name)), 'the refreshed list after tools/list_changed', change.tools.map((t) => t.name));
    const stale = await expectUnknownTool(s.client.callTool({ name: echo.name }), echo.name, 'a stale name');
    expect(stale.includes('list the tools again (tools/list)'), 'the unknown-tool error does not say to list the tools again', stale);
    const fake = 'nosuch__0123456789abcdef';
    const unknown = await expectUnknownTool(s.client.callTool({ name: fake }), fake, 'an unknown name');
    expect(unknown.replace(fake, echo.name) === stale, 'a stale name and an unknown name get different errors', { stale, unknown });
    await expectListError(s.client.listTools({ cursor: before.pages[0].nextCursor }), 'list the tools again', 'an old cursor');
    const after = await listAll(s);
    expect(after.tools.length === before.tools.length, 'a different number of tools after the change', [before.tools.length, after.tools.length]);
    const old = new Set(before.tools.map((t) => t.name));
    expect(after.tools.every((t) => !old.has(t.name)), 'a tool kept its name across the change');
    const echo2 = byTitle(after.tools, 'Echo');
    expectSucceeded(await s.client.callTool({ name: echo2.name, arguments: { word: 'salut' } }), 'echo after the change');
    expect(s.changes.length === 1, 'more than one tools/list_changed for one revision', s.changes.length);
    return { stale, renamed: [echo.name, echo2.name], listChanged: s.changes.length };
  },

  // The dispatch projection: one tool; help; a read op; a fingerprinted
  // write op; a batch with one failing op; a detached run and a wait on it.
  async dispatch(s) {
    const { tools } = await listAll(s);
    expect(tools.length === 1 && /^request__[0-9a-f]{64}$/.test(tools[0].name), 'the dispatch projection lists one tool', tools.map((t) => t.name));
    const name = tools[0].name;
    const call = async (args) => {
      const res = await s.client.callTool({ name, arguments: args });
      const ans = res.structuredContent;
      expect(isDeepStrictEqual(JSON.parse(res.content[0].text), ans), 'the text block differs from structuredContent', res);
      return { res, ans };
    };
    const help = (await call({ help: true })).ans.help;
    expect(help.commands.some((c) => c.startsWith('ts.tools/deploy() write, needs fingerprint')), 'help: no deploy signature', help.commands);
    const deploy = (await call({ help: 'ts.tools/deploy' })).ans.help;
    expect(/^sha256:[0-9a-f]{64}$/.test(deploy.schemaFingerprint), 'help deploy: schemaFingerprint', deploy);
    const read = (await call({ ops: [{ op: 'ts.tools/echo', args: { word: 'hola' } }] })).ans;
    expect(read.ok === true && isDeepStrictEqual(read.results[0].commandResult, { kind: 'structured', data: { word: 'hola' } }), 'read op', read);
    const write = (await call({ ops: [{ op: 'ts.tools/deploy', fingerprint: deploy.schemaFingerprint }] })).ans;
    expect(write.ok === true && write.results[0].outcome === 'succeeded', 'fingerprinted write op', write);
    const { res, ans: batch } = await call({ ops: [{ op: 'ts.tools/q00' }, { op: 'ts.tools/count', args: { count: 9 } }, { op: 'ts.tools/q01' }] });
    expect(res.isError !== true && batch.ok === false, 'a batch with a failing op is no error, and not ok', batch);
    expect(batch.results.map((r) => r.ok).join() === 'true,false,true', 'batch: per-op ok', batch);
    expect(batch.results[1].reason === 'invalid_input' && batch.results[1].schema?.inputSchema, 'batch: the failed op carries its schema', batch.results[1]);
    const detached = (await call({ ops: [{ op: 'ts.tools/progress', detach: true }] })).ans;
    expect(detached.results[0].detached === true, 'detach', detached);
    const id = detached.results[0].invocationId;
    const waited = (await call({ ops: [{ op: 'invocations.wait', args: { ids: [id], timeoutMs: 20000 } }] })).ans;
    const w = waited.results[0].wait;
    expect(w.allTerminal === true && w.entries[0].outcome === 'succeeded', 'wait on the detached run', waited);
    // The owner renames the endpoint (another process): the one tool's
    // name changes, the server says so, and the refreshed name works.
    rukh('profile', 'apply', '-f', env('RUKH_NEXT_PROFILE'));
    const change = await s.changed(1, 10_000);
    expect(change.error === null && change.tools.length === 1 && change.tools[0].name !== name && /^request__[0-9a-f]{64}$/.test(change.tools[0].name),
      'the refreshed dispatch tool after tools/list_changed', change);
    const renamed = await s.client.callTool({ name: change.tools[0].name, arguments: { help: true } });
    expect(renamed.isError !== true && renamed.structuredContent.help.commands.length === help.commands.length, 'help through the renamed dispatch tool', renamed);
    return { helpLines: help.commands.length, batch: batch.results.map((r) => ({ ok: r.ok, op: r.op, outcome: r.outcome, reason: r.reason })), wait: { allTerminal: w.allTerminal, outcome: w.entries[0].outcome }, listChanged: s.changes.length };
  },
};

async function main() {
  const name = process.argv[2];
  const run = scenarios[name];
  if (!run) {
    process.stderr.write(`usage: node client.mjs SCENARIO (one of ${Object.keys(scenarios).join(', ')})\n`);
    process.exit(2);
  }
  let s;
  try {
    s = await connect();
    const details = await run(s);
    const report = {
      scenario: name,
      ok: true,
      protocolVersion: s.protocolVersion,
      server: s.client.getServerVersion(),
      sdkErrors: s.errors,
      ...details,
    };
    process.stdout.write(JSON.stringify(report) + '\n');
  } catch (err) {
    process.stderr.write(`FAIL ${name}: ${err instanceof Failure ? err.message : err?.stack ?? err}\n`);
    if (s) process.stderr.write(`rukh mcp stderr:\n${s.stderr()}\n`);
    process.exitCode = 1;
  } finally {
    await s?.close().catch(() => {});
  }
}

await main();
