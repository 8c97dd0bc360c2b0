package typegen

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/model"
)

// fuzzSeeds are schemas at the edges of what upstreams send.
var fuzzSeeds = []string{
	`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
	`{"$defs":{"N":{"type":"object","properties":{"next":{"$ref":"#/$defs/N"},"v":{"anyOf":[{"$ref":"#/$defs/N"},{"type":"null"}]}}}},"$ref":"#/$defs/N"}`,
	`{"$defs":{"A":{"$ref":"#/$defs/B"},"B":{"$ref":"#/$defs/A"}},"properties":{"x":{"$ref":"#/$defs/A"}}}`,
	`{"$defs":{"A":{"anyOf":[{"$ref":"#/$defs/A"},{"type":"string"}]}},"properties":{"x":{"$ref":"#/$defs/A"}}}`,
	`{"definitions":{"a/b~c":{"type":"string"}},"properties":{"x":{"$ref":"#/definitions/a~1b~0c"}}}`,
	`{"properties":{"*/":{"description":"ends */ a comment","type":"string"},"\u2028":{}}}`,
	`{"type":["object","array","null"],"properties":{"a":{}},"items":{"type":"number"}}`,
	`{"allOf":[{"type":"string"},{"type":"number"}]}`,
	`{"enum":[{"a":[1,{"b":null}]},"\"",-0.0,1e400]}`,
	`{"type":"object","patternProperties":{"^a":{"type":"string"},"^b":{"type":"integer"}},"properties":{"a1":{"type":"string"}},"required":["a1"]}`,
	`{"prefixItems":[{"type":"string"}],"items":{"type":"number"},"type":"array"}`,
	`{"type":"object","properties":{"x":false,"y":true}}`,
	`{"properties":null,"required":"a","type":null,"enum":{},"anyOf":{}}`,
	`[]`, `null`, `7`, `"x"`, `true`, `false`, `{}`, `{"$ref":7}`, `{"$ref":"#/properties"}`,
	`{"type":"object","properties":{"constructor":{"type":"string"},"__proto__":{"type":"number"},"toString":{}}}`,
	`{"$defs":{"Record":{"type":"object","properties":{"a":{"type":"object"}}},"Promise":{"const":1}},"properties":{"r":{"$ref":"#/$defs/Record"},"p":{"$ref":"#/$defs/Promise"},"o":{"type":"object"}}}`,
	`{"description":"/** nested */ comment","properties":{"@x":{"description":"@param evil\n * @returns no","type":"string"}}}`,
}

// describeSchema describes a tool whose input and output are schema.
func describeSchema(schema []byte) (string, string, error) {
	tl := model.Tool{Address: "fz.tool", Name: "tool", Description: "Fuzzed */ tool.", InputSchema: schema, OutputSchema: schema}
	d := NewDescriber([]model.Tool{tl})
	out, err := d.Describe([]string{"fz"}, Options{Budget: -1})
	return Signature(&tl), out, err
}

func FuzzSchemaToTS(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, schema []byte) {
		sig, out, err := describeSchema(schema)
		if err != nil {
			t.Fatalf("Describe: %v", err)
		}
		if !strings.HasPrefix(sig, "fz.tool(") || !strings.Contains(out, "declare const fz: {") {
			t.Fatalf("unexpected output:\nsig: %s\n%s", sig, out)
		}
		if err := balanced(out); err != "" {
			t.Fatalf("%s in:\n%s", err, out)
		}
	})
}

// balanced checks that brackets pair up outside strings and comments, and
// that comments and strings are closed.
func balanced(ts string) string {
	var stack []byte
	pairs := map[byte]byte{')': '(', ']': '[', '}': '{', '>': '<'}
	for i := 0; i < len(ts); i++ {
		c := ts[i]
		switch {
		case strings.HasPrefix(ts[i:], "/*"):
			end := strings.Index(ts[i+2:], "*/")
			if end < 0 {
				return "unclosed comment"
			}
			i += end + 3
		case strings.HasPrefix(ts[i:], "//"):
			end := strings.IndexByte(ts[i:], '\n')
			if end < 0 {
				return ""
			}
			i += end
		case c == '"':
			for i++; i < len(ts) && ts[i] != '"'; i++ {
				if ts[i] == '\\' {
					i++
				}
				if i < len(ts) && ts[i] == '\n' {
					return "newline in a string"
				}
			}
			if i >= len(ts) {
				return "unclosed string"
			}
		case c == '(' || c == '[' || c == '{' || c == '<':
			stack = append(stack, c)
		case c == '>' && i > 0 && ts[i-1] == '=':
			// "=>" is not a bracket
		case c == ')' || c == ']' || c == '}' || c == '>':
			if len(stack) == 0 || stack[len(stack)-1] != pairs[c] {
				return "unbalanced " + string(c) + " at " + strconv.Itoa(i)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) > 0 {
		return "unclosed " + string(stack)
	}
	return ""
}

// TestFuzzOutputsCompile type-checks what the generator makes of the seeds,
// of the inputs the fuzzer saved in testdata/fuzz, and of the schema table.
func TestFuzzOutputsCompile(t *testing.T) {
	schemas := append([]string(nil), fuzzSeeds...)
	saved, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzSchemaToTS", "*"))
	for _, p := range saved {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		arg := strings.TrimSuffix(strings.TrimPrefix(lines[len(lines)-1], "[]byte("), ")")
		s, err := strconv.Unquote(arg)
		if err != nil {
			t.Fatalf("reading %s: %v", p, err)
		}
		schemas = append(schemas, s)
	}
	for _, tt := range schemaTable {
		schemas = append(schemas, tt.schema)
	}
	files := map[string]string{}
	for i, s := range schemas {
		_, out, err := describeSchema([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		if msg := balanced(out); msg != "" {
			t.Errorf("schema %s: %s", s, msg)
		}
		sp := NewDescriber([]model.Tool{{Address: "fz.tool", InputSchema: []byte(s)}}).spaces["fz"].load()
		files["fuzz_"+strconv.Itoa(i)+".ts"] = "// schema: " + strings.ReplaceAll(s, "\n", " ") + "\n" + out + calls(sp, sp.tools)
	}
	tsc(t, files)
}
