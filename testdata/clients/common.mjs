// Shared by the client scripts: where the hub binary is, the J2 journey's
// code, and how a script reports to the Go test (one JSON object on stdout).
import process from "node:process";

export const bin = process.env.CAP_BIN;
if (!bin) fail("CAP_BIN (the capabilities binary) is not set");

// J2: read from one source, write to another; the write asks once.
export const j2Code = `const r = await reader.echo({message: "from the reader"});
const again = await reader.echo({message: "twice"});
const w = await writer.record({item: r});
return w;`;

export function report(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

export function fail(msg) {
  process.stderr.write(`client: ${msg}\n`);
  process.exit(2);
}

// Runs main and turns any throw into a failure the Go test can print.
export function run(main) {
  main().then(
    () => process.exit(0),
    (e) => fail(e && e.stack ? e.stack : String(e)),
  );
}

// The text of a tool result's content.
export function textOf(res) {
  return (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}
