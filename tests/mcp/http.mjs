// Drives `rukh mcp --http` with the official TypeScript SDK client over
// Streamable HTTP with a bearer token (run by tests/http_test.go):
//
//   RUKH_HTTP_URL=http://127.0.0.1:PORT/mcp RUKH_HTTP_TOKEN=… RUKH_HTTP_BAD_TOKEN=… node http.mjs
//
// It lists the tools, calls each, and checks that a bad token is refused
// with 401 and a challenge naming the resource metadata; it prints a JSON
// report and exits 0, or says why on stderr and exits 1. With the
// argument `progress` it calls examples/greet with a progress token
// instead (tests/http_stream_test.go, TestHTTPProgress).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

function fail(message) {
  process.stderr.write(`FAIL http: ${message}\n`);
  process.exit(1);
}

const url = new URL(process.env.RUKH_HTTP_URL);
const connect = async (token) => {
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  const client = new Client({ name: 'rukh-ts-http', version: '1.0.0' });
  await client.connect(transport);
  return client;
};

// `node http.mjs progress`: call examples/greet (title "Greet someone")
// three times over with a progress token (onprogress), and report the
// notifications that arrived before the result.
if (process.argv[2] === 'progress') {
  try {
    const client = await connect(process.env.RUKH_HTTP_TOKEN);
    const { tools } = await client.listTools();
    const greet = tools.find((t) => t.title === 'Greet someone');
    if (!greet) fail(`no greet tool in ${JSON.stringify(tools.map((t) => t.title))}`);
    const notes = [];
    const res = await client.callTool({ name: greet.name, arguments: { name: 'Ada', times: 3 } }, undefined, {
      onprogress: (p) => notes.push({ progress: p.progress, total: p.total, message: p.message }),
    });
    const seen = notes.slice(); // what arrived before the result
    if (res.isError) fail(`calling greet: ${JSON.stringify(res)}`);
    await client.close();
    process.stdout.write(JSON.stringify({ ok: true, notes: seen, text: res.structuredContent?.commandResult?.text }) + '\n');
  } catch (err) {
    fail(err?.stack ?? String(err));
  }
  process.exit(0);
}

try {
  const client = await connect(process.env.RUKH_HTTP_TOKEN);
  const { tools } = await client.listTools();
  const called = [];
  for (const t of tools) {
    const res = await client.callTool({ name: t.name, arguments: {} });
    if (res.isError) fail(`calling ${t.name}: ${JSON.stringify(res)}`);
    called.push({ title: t.title, outcome: res.structuredContent?.outcome });
  }
  await client.close();
  let refused = null;
  const res = await fetch(url, {
    method: 'POST',
    headers: { Authorization: `Bearer ${process.env.RUKH_HTTP_BAD_TOKEN}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  refused = { status: res.status, challenge: res.headers.get('www-authenticate') };
  process.stdout.write(JSON.stringify({ ok: true, tools: tools.map((t) => t.title), called, refused }) + '\n');
} catch (err) {
  fail(err?.stack ?? String(err));
}
