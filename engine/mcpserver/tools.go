package mcpserver

import "encoding/json"

// The fixed surface: the three tools and the instructions. Every word here is
// paid for in every agent's context, so it is short; the tokens are measured
// by a test with a real tokenizer (≤ 1,000 for all of it).

const instructions = `This server reaches many tools through three. Loop: search (find tools by intent) → describe (exact TypeScript types) → execute (run JavaScript that calls them: each source is a global, e.g. await github.createIssue({...})). Reads run; writes may need a person's approval, which pauses the run: tell the person, then resume.`

const searchDescription = `Find tools by what they do. Returns one-line TypeScript signatures, best first; [asks] marks tools whose calls need a person's approval. An empty query with a namespace lists it.`

const describeDescription = `Exact TypeScript declarations for tool addresses (github.createIssue), namespaces (github) or type names from earlier output (github.Issue); skill:<name> gives a skill's instructions (SKILL.md) and its files. Read before calling a tool.`

const executeDescription = `Run the body of an async JavaScript function (TypeScript types are stripped). Each source is a global object of async functions: const r = await github.createIssue({owner, repo, title}); return r. Also hub.search(q), hub.describe(t), console.log. A tool result over 64 KB arrives as {handle, size, type, preview}: read parts with await hub.read(handle, {offset, length}) or hub.read(handle, {jsonPath: "$.items[0]"}); a run result too large for the reply comes back the same way. No network or filesystem: only these functions reach outside. Calls pass {connection: "name"} as a second argument to pick a credential. Returns {status, result, logs, calls, pending}. awaiting_approval: a page or window opens on the person's screen to decide; tell the person, then call execute({resume: runId}) for the result. awaiting_connection: the person stores the credential outside the chat. Never ask the person for passwords or tokens in chat.`

var searchSchema = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","maxLength":200,"description":"what the tool should do"},"namespace":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":25,"default":8}},"additionalProperties":false}`)

var describeSchema = json.RawMessage(`{"type":"object","properties":{"targets":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":10}},"required":["targets"],"additionalProperties":false}`)

var executeSchema = json.RawMessage(`{"type":"object","properties":{"code":{"type":"string","maxLength":65536,"description":"body of an async function"},"resume":{"type":"string","description":"runId of an earlier run: continues it, or returns its final result"}},"additionalProperties":false}`)

var envelopeSchema = json.RawMessage(`{"type":"object","properties":{"runId":{"type":"string"},"status":{"type":"string","enum":["completed","failed","awaiting_approval","awaiting_connection","cancelled","expired"]},"result":{},"error":{"type":"object","properties":{"code":{"type":"string"},"message":{"type":"string"},"hint":{"type":"string"}}},"logs":{"type":"array","items":{"type":"string"}},"calls":{"type":"array","items":{"type":"object","properties":{"address":{"type":"string"},"ok":{"type":"boolean"},"ms":{"type":"number"}}}},"pending":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"kind":{"type":"string"},"address":{"type":"string"},"summary":{"type":"string"},"message":{"type":"string"}}}},"truncated":{"type":"object"},"notices":{"type":"array","items":{"type":"string"}},"decisions":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"address":{"type":"string"},"choice":{"type":"string"},"channel":{"type":"string"}}}}},"required":["runId","status"]}`)
