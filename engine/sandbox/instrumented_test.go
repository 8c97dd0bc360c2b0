package sandbox

import (
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"testing"
)

// TestInstrumentationInOneFile: the instrumented QuickJS kept on disk is
// named by interrupt.go's source (instrumentedPath), so everything that
// decides what instrumentModule writes must be declared there: a function,
// method, type, constant or variable of the package it reaches, however
// deeply, declared in another file would change the module without
// changing its name, and an old module would be taken for the new one.
func TestInstrumentationInOneFile(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, n := range names {
		if ok, err := build.Default.MatchFile(".", n); err != nil || !ok || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}}
	// The standard library's export data is at hand, the modules' is not:
	// what comes from them stays untyped, which leaves every name of this
	// package resolved.
	conf := types.Config{Importer: importer.Default(), Error: func(error) {}}
	pkg, _ := conf.Check("sandbox", fset, files, info)
	// Where each object of the package is declared, and its declaration.
	decl := map[types.Object]ast.Node{}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				decl[info.Defs[d.Name]] = d
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						decl[info.Defs[s.Name]] = s
					case *ast.ValueSpec:
						for _, n := range s.Names {
							decl[info.Defs[n]] = s
						}
					}
				}
			}
		}
	}
	seen := map[types.Object]bool{}
	var outside []string
	var visit func(types.Object)
	visit = func(o types.Object) {
		if o == nil || seen[o] || o.Pkg() != pkg {
			return
		}
		seen[o] = true
		d, ok := decl[o]
		if !ok {
			return // a local, a field, a parameter
		}
		if file := filepath.Base(fset.Position(d.Pos()).Filename); file != "interrupt.go" {
			outside = append(outside, o.Name()+" ("+file+")")
		}
		ast.Inspect(d, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				visit(info.Uses[id])
			}
			return true
		})
	}
	visit(pkg.Scope().Lookup("instrumentModule"))
	if len(seen) < 10 {
		t.Fatalf("the walk from instrumentModule reached %d names", len(seen))
	}
	sort.Strings(outside)
	if len(outside) > 0 {
		t.Errorf("instrumentModule reaches names declared outside interrupt.go: %v; move them there, or add their files to instrumentedPath's name", outside)
	}
}

// TestQuickJSNamedByItsModule: the instrumented QuickJS's file is named by
// the qjs module's version and go.sum checksum when the build recorded
// them (a binary built by go build; TestSandboxCacheNamedByModule in the
// e2e package checks the real binary's file), by the module's bytes when
// it did not (a test binary, a replaced module).
func TestQuickJSNamedByItsModule(t *testing.T) {
	dep := func(m debug.Module) *debug.BuildInfo {
		return &debug.BuildInfo{Deps: []*debug.Module{{Path: "golang.org/x/sys", Version: "v0.1.0", Sum: "h1:x"}, &m}}
	}
	for _, c := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"recorded", dep(debug.Module{Path: qjsModule, Version: "v0.0.6", Sum: "h1:abc="}), qjsModule + "@v0.0.6 h1:abc="},
		{"replaced", dep(debug.Module{Path: qjsModule, Version: "v0.0.6", Replace: &debug.Module{Path: "../qjs"}}), string(qjsWasm)},
		{"no checksum", dep(debug.Module{Path: qjsModule, Version: "v0.0.6"}), string(qjsWasm)},
		{"not a dependency", dep(debug.Module{Path: "example.com/other", Version: "v1.0.0", Sum: "h1:y"}), string(qjsWasm)},
		{"no build info", nil, string(qjsWasm)},
	} {
		if got := string(qjsIdentityIn(c.info)); got != c.want {
			t.Errorf("%s: qjsIdentityIn = %.60q, want %.60q", c.name, got, c.want)
		}
	}
}
