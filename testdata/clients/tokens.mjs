// Measures the hub's fixed surface — the three tool definitions as tools/list
// serves them plus the server instructions — with a real tokenizer
// (gpt-tokenizer, o200k_base), read through the @modelcontextprotocol/sdk
// 1.x client over stdio. Prints {tools, instructions, total, perTool}.
//
//   node tokens.mjs [profile]    the profile's surface (default: default)
import process from "node:process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { encode } from "gpt-tokenizer/encoding/o200k_base";
import { bin, report, run } from "./common.mjs";

const profile = process.argv[2];

run(async () => {
  const client = new Client({ name: "tokens-e2e", version: "1.0.0" });
  const args = ["hub", "serve", "--stdio", ...(profile ? ["--profile", profile] : [])];
  await client.connect(new StdioClientTransport({ command: bin, args, env: { ...process.env }, stderr: "inherit" }));
  const { tools } = await client.listTools();
  const instructions = client.getInstructions() || "";
  await client.close();
  const perTool = Object.fromEntries(tools.map((t) => [t.name, encode(JSON.stringify(t)).length]));
  const toolsTokens = encode(JSON.stringify(tools)).length;
  const instructionsTokens = encode(instructions).length;
  report({ encoding: "o200k_base", tools: toolsTokens, instructions: instructionsTokens, total: toolsTokens + instructionsTokens, perTool, names: tools.map((t) => t.name) });
});
