package typegen

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// tsc type-checks files (each a module) with the pinned TypeScript compiler
// in strict mode, in one run, and fails t with its diagnostics.
func tsc(t *testing.T, files map[string]string) {
	t.Helper()
	dir := t.TempDir()
	args := []string{testenv.NPMPath(t, "typescript/bin/tsc"), "--strict", "--noEmit", "--target", "es2022", "--lib", "es2022", "--pretty", "false"}
	for name, src := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src+"\nexport {};\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, p)
	}
	out, err := exec.Command(testenv.Node(t), args...).CombinedOutput()
	if err != nil {
		diag := string(out)
		if len(diag) > 8000 {
			diag = diag[:8000] + "\n…"
		}
		// Show the first failing file for context.
		if i := strings.Index(diag, ".ts("); i > 0 {
			name := filepath.Base(diag[strings.LastIndex(diag[:i], "/")+1 : i+3])
			src := files[name]
			if len(src) > 4000 {
				src = src[:4000] + "\n…"
			}
			diag += "\n--- " + name + ":\n" + src
		}
		t.Fatalf("tsc --strict failed (%v):\n%s", err, diag)
	}
}

// calls is TypeScript that calls every tool of sp as guest code would: once
// with a value of its input type and a connection, and once with a literal
// holding its required fields.
func calls(sp *space, tools []*toolDecl) string {
	var b strings.Builder
	fmt.Fprintf(&b, "async function calls_%s() {\n", sp.ns)
	for _, t := range tools {
		fn := sp.ns + "." + t.method
		fmt.Fprintf(&b, "  { const input = null! as Parameters<typeof %s>[0]; const out = await %s(input, { connection: \"work\" }); void out; }\n", fn, fn)
		if lit := placeholder(sp.reg, t.input, 0); lit != "" {
			fmt.Fprintf(&b, "  await %s(%s);\n", fn, lit)
		}
	}
	b.WriteString("}\nvoid calls_" + sp.ns + ";\n")
	return b.String()
}

// placeholder is a TypeScript expression of type t holding only required
// fields, or "" when it cannot make one.
func placeholder(reg *registry, t *typ, depth int) string {
	if depth > 6 {
		return ""
	}
	switch t.kind {
	case kUnknown:
		return "{}"
	case kPrim:
		return map[string]string{"string": `"x"`, "number": "1", "boolean": "true", "null": "null", "undefined": "undefined"}[t.text]
	case kLit:
		if strings.HasPrefix(t.text, "Record<") {
			return "{}"
		}
		if c := t.text[0]; c == '"' || c == '-' || c >= '0' && c <= '9' || t.text == "true" || t.text == "false" || t.text == "null" {
			return t.text
		}
		return "" // an object or tuple literal type: not worth a value
	case kArray:
		return "[]"
	case kTuple:
		parts := make([]string, len(t.items))
		for i, it := range t.items {
			if parts[i] = placeholder(reg, it, depth+1); parts[i] == "" {
				return ""
			}
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case kUnion:
		for _, it := range t.items {
			if p := placeholder(reg, it, depth+1); p != "" {
				return p
			}
		}
	case kRef:
		if n := reg.byName[t.text]; n != nil && n.t != nil {
			return placeholder(reg, n.t, depth+1)
		}
	case kObject:
		var parts []string
		for _, p := range t.props {
			if p.name == "constructor" {
				return "" // TypeScript gives {} a constructor of type Function
			}
			if !p.required {
				continue
			}
			v := placeholder(reg, p.t, depth+1)
			if v == "" {
				return ""
			}
			parts = append(parts, propName(p.name)+": "+v)
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	}
	return ""
}

// TestCorpusCompiles type-checks the declarations of every namespace (no
// budget) and of every tool (a tight budget of 300 tokens, plus the
// declarations of the types it left out, described on their own the way a
// model follows up), each with calls of its tools.
func TestCorpusCompiles(t *testing.T) {
	tools := testenv.CorpusTools(t)
	d := NewDescriber(tools)
	files := map[string]string{}
	followUps := 0
	for _, ns := range d.names {
		sp := d.spaces[ns].load()
		out, err := d.Describe([]string{ns}, Options{Budget: -1})
		if err != nil {
			t.Fatal(err)
		}
		files["ns_"+ns+".ts"] = out + calls(sp, sp.tools)
		for _, td := range sp.tools {
			decl, n := describeClosure(t, d, td.address)
			files["tool_"+td.address+".ts"] = decl + calls(sp, []*toolDecl{td})
			followUps += n
		}
	}
	t.Logf("%d files; %d types left out of a tool's declaration and described on their own", len(files), followUps)
	if followUps == 0 {
		t.Errorf("no tool declaration left a type out: the follow-up path is not exercised")
	}
	if len(files) < 500 {
		t.Fatalf("only %d files to check; the corpus has 501 tools", len(files))
	}
	tsc(t, files)
}

// describeClosure describes target within the default budget, then every
// type it left out, the way a model would follow up.
func describeClosure(t *testing.T, d *Describer, target string) (string, int) {
	t.Helper()
	out, err := d.Describe([]string{target}, Options{Budget: 300})
	if err != nil {
		t.Fatal(err)
	}
	all := out
	seen := map[string]bool{}
	for queue := leftOut(out); len(queue) > 0; queue = queue[1:] {
		if seen[queue[0]] {
			continue
		}
		seen[queue[0]] = true
		more, err := d.Describe([]string{queue[0]}, Options{Budget: 300})
		if err != nil {
			t.Fatalf("describing %s, left out of %s: %v", queue[0], target, err)
		}
		all += more
		queue = append(queue, leftOut(more)...)
	}
	return all, len(seen)
}

// leftOut parses the names a Describe output says it left out.
func leftOut(out string) []string {
	const marker = "// Left out to stay within "
	i := strings.Index(out, marker)
	if i < 0 {
		return nil
	}
	line := out[i:]
	line = line[strings.Index(line, ": ")+2 : strings.Index(line, ". Describe")]
	if j := strings.Index(line, " and "); j >= 0 {
		line = line[:j]
	}
	return strings.Split(line, ", ")
}

var _ = model.Tool{}
