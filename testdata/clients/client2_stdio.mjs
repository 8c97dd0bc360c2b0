// @modelcontextprotocol/client 2.x over stdio, pinned to protocol
// 2026-07-28, against `capabilities hub serve --stdio`.
//
//   node client2_stdio.mjs <answer>
//
// The client's stdio transport spawns serve --stdio itself; pinned, it
// probes with server/discover first (on a short-lived sibling process) and
// fails to connect unless the hub offers 2026-07-28 — there is no fallback.
// Declares form elicitation and answers every input request with <answer>
// (once | run | always | deny | decline). Runs tools/list, search, a read
// execute and the J2 journey's execute; the client fulfils the hub's input
// request (MRTR) and retries the same tools/call with inputResponses and the
// requestState. Each tools/call and its answer on the session's pipe is
// recorded so the test can check the round trip, and so are the transport's
// errors and every line of serve's stdout that is not protocol. Prints one
// JSON object.
import process from "node:process";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { bin, j2Code, report, run, textOf } from "./common.mjs";

const answer = process.argv[2] || "once";

// wire records, for each tools/call sent, its shape and its answer's.
const wire = [];
const calls = new Map();

function watch(transport) {
  const send = transport.send.bind(transport);
  transport.send = (msg, opts) => {
    if (msg.method === "tools/call") {
      const entry = {
        protocolMeta: msg.params._meta?.["io.modelcontextprotocol/protocolVersion"] ?? null,
        tool: msg.params.name,
        hasInputResponses: !!msg.params.inputResponses,
        hasRequestState: typeof msg.params.requestState === "string",
      };
      calls.set(msg.id, entry);
      wire.push(entry);
    }
    return send(msg, opts);
  };
  // Protocol.connect installs its handlers after this; wrap what it sets.
  wrap(transport, "onmessage", (msg) => {
    const entry = "id" in msg && calls.get(msg.id);
    if (entry && !("method" in msg)) {
      calls.delete(msg.id);
      entry.resultType = msg.result?.resultType ?? null;
      entry.inputRequestIds = msg.result?.inputRequests ? Object.keys(msg.result.inputRequests) : [];
      entry.error = msg.error ?? null;
    }
  });
  wrap(transport, "onerror", (err) => transportErrors.push(String(err)));
  // The client skips a stdout line that is not JSON without a word; keep
  // every byte serve wrote so the test can check them all.
  const append = transport._readBuffer.append.bind(transport._readBuffer);
  transport._readBuffer.append = (chunk) => {
    stdout.push(Buffer.from(chunk));
    return append(chunk);
  };
}

const transportErrors = [];
const stdout = [];

// notProtocol lists the lines of serve's stdout that are not JSON-RPC 2.0.
function notProtocol() {
  return Buffer.concat(stdout).toString("utf8").split("\n").filter((line) => {
    if (line === "") return false;
    try {
      return JSON.parse(line).jsonrpc !== "2.0";
    } catch {
      return true;
    }
  });
}

// wrap makes transport[name] call see(...args) before the handler set on it.
function wrap(transport, name, see) {
  let handler;
  Object.defineProperty(transport, name, {
    configurable: true,
    get: () => handler,
    set: (h) => {
      handler = h && ((...args) => {
        see(...args);
        return h(...args);
      });
    },
  });
}

run(async () => {
  const client = new Client(
    { name: "client2-stdio-e2e", version: "2.0.0" },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  const elicitations = [];
  client.setRequestHandler("elicitation/create", async (req) => {
    elicitations.push(req.params);
    if (answer === "decline" || answer === "cancel") return { action: answer };
    return { action: "accept", content: { choice: answer } };
  });
  const transport = new StdioClientTransport({
    command: bin,
    args: ["hub", "serve", "--stdio"],
    env: { ...process.env },
    stderr: "inherit",
  });
  watch(transport);
  await client.connect(transport);
  const out = { protocolVersion: client.getNegotiatedProtocolVersion(), server: client.getServerVersion() };
  out.instructions = client.getInstructions();
  const tools = await client.listTools();
  out.toolNames = tools.tools.map((t) => t.name).sort();
  const s = await client.callTool({ name: "search", arguments: { query: "record an item" } });
  out.search = { text: textOf(s), isError: !!s.isError };
  const r = await client.callTool({ name: "execute", arguments: { code: 'return await reader.echo({message: "hi"})' } });
  out.read = { text: textOf(r), structured: r.structuredContent, isError: !!r.isError };
  const j = await client.callTool({ name: "execute", arguments: { code: j2Code } });
  out.j2 = { text: textOf(j), structured: j.structuredContent, isError: !!j.isError };
  out.elicitations = elicitations;
  out.wire = wire;
  out.transportErrors = transportErrors;
  await client.close();
  out.notProtocol = notProtocol();
  report(out);
});
