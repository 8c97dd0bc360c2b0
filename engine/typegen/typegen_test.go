package typegen

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

// compact renders a schema as a one-line TypeScript type, nested objects
// inlined.
func compact(t *testing.T, schema string) string {
	t.Helper()
	root, err := decode([]byte(schema))
	if err != nil {
		return "unknown"
	}
	b := &builder{reg: newRegistry(), root: root, method: "T", refs: map[string]*typ{}}
	r := &renderer{compact: true, depth: 1 << 20}
	r.typ(b.conv(root, "T", false), 0, "")
	return r.b.String()
}

// schemaTable covers JSON Schema keyword by keyword.
var schemaTable = []struct{ name, schema, want string }{
	{"string", `{"type":"string"}`, "string"},
	{"integer", `{"type":"integer","minimum":1}`, "number"},
	{"number boolean null", `{"type":["number","boolean","null"]}`, "number | boolean | null"},
	{"nullable", `{"type":"string","nullable":true}`, "string | null"},
	{"enum", `{"type":"string","enum":["open","closed"]}`, `"open" | "closed"`},
	{"enum mixed", `{"enum":["a",1,true,null,{"x":1},[2]]}`, `"a" | 1 | true | null | { x: 1 } | [2]`},
	{"const", `{"const":"x\"y"}`, `"x\"y"`},
	{"empty enum", `{"enum":[]}`, "never"},
	{"true", `true`, "unknown"},
	{"false", `false`, "never"},
	{"empty", `{}`, "unknown"},
	{"object", `{"type":"object","properties":{"b":{"type":"number"},"a":{"type":"string"}},"required":["a"]}`, "{ a: string; b?: number }"},
	{"quoted names", `{"properties":{"x-y":{},"1a":{},"ok_$":{},"":{}}}`, `{ "x-y"?: unknown; "1a"?: unknown; ok_$?: unknown; ""?: unknown }`},
	{"open object", `{"type":"object"}`, "Record<string, unknown>"},
	{"closed empty object", `{"type":"object","additionalProperties":false}`, "Record<string, never>"},
	{"additionalProperties", `{"type":"object","additionalProperties":{"type":"number"}}`, "{ [key: string]: number }"},
	{"index with props", `{"properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":{"type":"number"}}`, "{ a: string; [key: string]: number | string }"},
	{"index with optional props", `{"properties":{"a":{"type":"string"}},"patternProperties":{"^x-":{"type":"boolean"}}}`, "{ a?: string; [key: string]: boolean | string | undefined }"},
	{"array", `{"type":"array","items":{"type":["string","number"]}}`, "(string | number)[]"},
	{"array without items", `{"type":"array"}`, "unknown[]"},
	{"tuple draft 2020", `{"type":"array","prefixItems":[{"type":"string"},{"type":"number"}],"items":false}`, "[string, number]"},
	{"tuple draft 4", `{"type":"array","items":[{"type":"string"}],"additionalItems":{"type":"boolean"}}`, "[string, ...boolean[]]"},
	{"open tuple", `{"prefixItems":[{"type":"string"}]}`, "[string, ...unknown[]]"},
	{"anyOf", `{"anyOf":[{"type":"string","minLength":1},{"type":"null"}]}`, "string | null"},
	{"oneOf objects", `{"oneOf":[{"properties":{"a":{"const":1}},"required":["a"]},{"properties":{"b":{"const":2}},"required":["b"]}]}`, "{ a: 1 } | { b: 2 }"},
	{"allOf", `{"allOf":[{"properties":{"a":{"type":"string"}}},{"properties":{"b":{"type":"string"}}}]}`, "{ a?: string } & { b?: string }"},
	{"base with oneOf required", `{"type":"object","properties":{"a":{"type":"string"}},"oneOf":[{"required":["a"]}]}`, "{ a?: string }"},
	{"ref", `{"$defs":{"Node":{"type":"object","properties":{"next":{"$ref":"#/$defs/Node"}}}},"$ref":"#/$defs/Node"}`, "Node"},
	{"ref root recursion", `{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#"}}}}`, "{ children?: TInput[] }"},
	{"missing ref", `{"$ref":"#/$defs/Nope"}`, "unknown"},
	{"remote ref", `{"$ref":"https://example.com/s.json"}`, "unknown"},
	{"unknown keywords", `{"type":"string","x-go-type":"Foo","contentEncoding":"base64"}`, "string"},
	{"unknown type", `{"type":"decimal"}`, "unknown"},
	{"bad type", `{"type":7}`, "unknown"},
	{"bad properties", `{"type":"object","properties":[1,2]}`, "Record<string, unknown>"},
	{"not json", `{"type":`, "unknown"},
	{"not a schema", `"string"`, "unknown"},
	{"huge number const", `{"const":1e999}`, "number"},
	{"negative float const", `{"const":-1.5e3}`, "-1.5e3"},
}

func TestSchemaToTS(t *testing.T) {
	for _, tt := range schemaTable {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, compact(t, tt.schema)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tt.schema, diff)
			}
		})
	}
}

func tool(addr, desc, in, out string) model.Tool {
	t := model.Tool{Address: addr, Description: desc, InputSchema: []byte(in)}
	if out != "" {
		t.OutputSchema = []byte(out)
	}
	return t
}

func TestSignature(t *testing.T) {
	tests := []struct {
		tool model.Tool
		want string
	}{
		{tool("github.createIssue", "", `{"type":"object","properties":{"owner":{"type":"string"},"repo":{"type":"string"},"title":{"type":"string"},"body":{"type":"string"},"labels":{"type":"array","items":{"type":"string"}}},"required":["owner","repo","title"]}`, `{"title":"Issue","type":"object","properties":{"number":{"type":"integer"}}}`),
			"github.createIssue(input: { owner: string; repo: string; title: string; body?: string; labels?: string[] }): Promise<CreateIssueResult>"},
		{tool("github.getMe", "", `{"type":"object","properties":{}}`, ""), "github.getMe(): Promise<unknown>"},
		{tool("x.noSchema", "", ``, ""), "x.noSchema(): Promise<unknown>"},
		{tool("x.opt", "", `{"type":"object","properties":{"a":{"type":"string"}}}`, ""), "x.opt(input?: { a?: string }): Promise<unknown>"},
		{tool("x.long", "", `{"type":"object","required":["a"],"properties":{"a":{"type":"string","enum":["aaaaaaaaaaaaaa","bbbbbbbbbbbbbbbbbbbb","cccccccccccccccccccc"]},"b":{"type":"object","properties":{"deeply":{"type":"string"},"nested":{"type":"number"},"object":{"type":"boolean"}}},"c":{"description":"`+strings.Repeat("x", 200)+`","type":"string"},"d":{"type":"string"},"e":{"type":"string"},"f":{"type":"string"},"g":{"type":"string"},"h":{"type":"string"},"i":{"type":"string"},"j":{"type":"string"}}}`, ""),
			"x.long(input: { a: string; b?: LongB; c?: string; d?: string; e?: string; f?: string; g?: string; h?: string; i?: string; j?: string }): Promise<unknown>"},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, Signature(&tt.tool)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.tool.Address, diff)
		}
	}
}

func TestDescribeErrors(t *testing.T) {
	d := NewDescriber([]model.Tool{
		tool("github.createIssue", "Create an issue.", `{"type":"object"}`, `{"type":"object","properties":{"id":{"type":"number"}}}`),
		tool("github.listIssues", "List issues.", `{"type":"object"}`, ""),
	})
	tests := []struct {
		targets []string
		want    string
		unknown bool
	}{
		{nil, "no targets: pass 1 to 10 tool addresses (github.createIssue), namespaces (github) or type names (github.Issue)", false},
		{strings.Split("a b c d e f g h i j k", " "), "too many targets (11): pass at most 10 and describe the rest in another call", false},
		{[]string{"github.createIsue"}, `unknown target "github.createIsue": no tool or type with that address; closest: github.createIssue, github.listIssues, github.CreateIssueResult`, true},
		{[]string{"githb"}, `unknown target "githb": no namespace with that name; closest: github`, true},
		{[]string{"gitlab.createIssue"}, `unknown target "gitlab.createIssue": no namespace "gitlab"; closest: github`, true},
		{[]string{"github."}, `unknown target "github.": no tool or type with that address; closest: github.createIssue, github.listIssues, github.CreateIssueResult`, true},
	}
	for _, tt := range tests {
		_, err := d.Describe(tt.targets, Options{})
		if err == nil {
			t.Errorf("Describe(%q) = nil error, want %q", tt.targets, tt.want)
			continue
		}
		if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
			t.Errorf("Describe(%q) error (-want +got):\n%s", tt.targets, diff)
		}
		if errors.Is(err, ErrUnknownTarget) != tt.unknown {
			t.Errorf("Describe(%q): errors.Is(err, ErrUnknownTarget) = %v", tt.targets, !tt.unknown)
		}
	}
	// Upstream names and type names resolve.
	for _, target := range []string{"github.create_issue", "github.CreateIssueResult", "github"} {
		if _, err := d.Describe([]string{target}, Options{}); err != nil {
			t.Errorf("Describe(%q): %v", target, err)
		}
	}
}

// TestBudget checks that describing any tool or namespace of the corpus
// stays within the budget (one tool is always shown whole), and keeps full
// detail when it fits.
func TestBudget(t *testing.T) {
	d := NewDescriber(testenv.CorpusTools(t))
	for _, budget := range []int{DefaultBudget, 800} {
		for _, ns := range d.names {
			targets := [][]string{{ns}}
			for _, td := range d.spaces[ns].load().tools {
				targets = append(targets, []string{td.address})
			}
			for _, tg := range targets {
				out, err := d.Describe(tg, Options{Budget: budget})
				if err != nil {
					t.Fatal(err)
				}
				if n := Tokens(out); n > budget && strings.Count(out, "(input") > 1 {
					t.Errorf("describe %s within %d: %d tokens", tg[0], budget, n)
				}
				if full, _ := d.Describe(tg, Options{Budget: -1}); out != full && Tokens(full) <= budget {
					t.Errorf("describe %s within %d: cut detail although the full declaration fits", tg[0], budget)
				}
			}
		}
	}
}

// TestDecode checks the JSON parser against encoding/json.
func TestDecode(t *testing.T) {
	for _, in := range []string{
		`{"a":[1,-2.5e+3,true,false,null,"x\"\u00e9\ud83d\ude00"],"b":{},"c":[]}`, ` "\/" `, `0`, `-0.0`, `1E9`,
		`{"a":1,}`, `[1,]`, `01`, `1.`, `.5`, `-`, `+1`, `"a`, `{"a" 1}`, `[1 2]`, `tru`, `nul`, "\"\x01\"", `{} x`, ``, `"\x"`, "\"\xff\"",
	} {
		var want any
		wantErr := json.Unmarshal([]byte(in), &want) != nil
		got, err := decode([]byte(in))
		if (err != nil) != wantErr {
			t.Errorf("decode(%q) error = %v, encoding/json fails: %v", in, err, wantErr)
			continue
		}
		if err == nil && canonicalJSON(got) != mustCompact(t, in) {
			t.Errorf("decode(%q) = %s, want %s", in, canonicalJSON(got), mustCompact(t, in))
		}
	}
}

func mustCompact(t *testing.T, in string) string {
	var v any
	d := json.NewDecoder(strings.NewReader(in))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TestSignatureNamesResolve checks that every type a signature names (its
// output, shortened nested objects) can be described by that name.
func TestSignatureNamesResolve(t *testing.T) {
	tools := testenv.CorpusTools(t)
	d := NewDescriber(tools)
	named := regexp.MustCompile(`\b[A-Z][A-Za-z0-9_]*\b`)
	literals := regexp.MustCompile(`"(?:[^"\\]|\\.)*"|/\*.*?\*/`)
	checked := 0
	for i := range tools {
		sig := Signature(&tools[i])
		ns, _, _ := model.SplitAddress(tools[i].Address)
		for _, name := range named.FindAllString(literals.ReplaceAllString(sig, ""), -1) {
			if name == "Promise" || name == "Record" {
				continue
			}
			checked++
			if _, err := d.Describe([]string{ns + "." + name}, Options{}); err != nil {
				t.Errorf("%s names %s: %v", sig, name, err)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no signature named a type")
	}
}

// TestConcurrentDescribe describes namespaces from several goroutines while
// they are converted on first use (run with -race).
func TestConcurrentDescribe(t *testing.T) {
	d := NewDescriber(testenv.CorpusTools(t))
	done := make(chan bool)
	for range 4 {
		go func() {
			defer func() { done <- true }()
			for _, ns := range d.names {
				if _, err := d.Describe([]string{ns, ns + ".nope"}, Options{}); err == nil {
					t.Errorf("describing %s.nope: no error", ns)
				}
				if _, err := d.Describe([]string{ns}, Options{}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
}
