// Reads a JSON array of strings on stdin and prints their o200k_base token
// counts (gpt-tokenizer, from testdata/npm) as a JSON array.
import { encode } from "gpt-tokenizer/encoding/o200k_base";

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (d) => { input += d; });
process.stdin.on("end", () => {
  const texts = JSON.parse(input);
  process.stdout.write(JSON.stringify(texts.map((s) => encode(s).length)) + "\n");
});
