package console_test

import (
	"context"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/frontend"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// TestFrontendTypeChecks runs the TypeScript compiler pinned in
// testdata/npm over the screens: plain ES modules with JSDoc types,
// checked with --checkJs --strict (frontend/tsconfig.json), nothing
// emitted.
func TestFrontendTypeChecks(t *testing.T) {
	t.Parallel()
	tsc := testenv.NPMPath(t, "typescript/bin/tsc")
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(120*time.Second))
	defer cancel()
	cmd := exec.CommandContext(ctx, testenv.Node(t), tsc, "-p", filepath.Join(testenv.Root(t), "frontend", "tsconfig.json"), "--checkJs", "--strict", "--noEmit")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tsc --checkJs --strict --noEmit over frontend/: %v\n%s", err, out)
	}
}

// htmlSinks are the ways a string becomes markup or code in a page. The
// screens build the DOM from text only (frontend/dom.js); the page's CSP
// also requires Trusted Types, so the browser refuses these at run time.
var htmlSinks = regexp.MustCompile(`\.innerHTML\b|\.outerHTML\b|insertAdjacentHTML|document\.write|\beval\(|new Function\b|setTimeout\(\s*["'\x60]|setInterval\(\s*["'\x60]|createContextualFragment|DOMParser|\.srcdoc\b|javascript:`)

// TestScreensNeverWriteHTML reads every served script: no statement turns
// a string into markup or code (comments may name the sinks).
func TestScreensNeverWriteHTML(t *testing.T) {
	files := frontend.Files()
	scripts, err := fs.Glob(files, "*.js")
	if err != nil || len(scripts) < 3 {
		t.Fatalf("the embedded screens hold %d scripts (%v)", len(scripts), err)
	}
	for _, name := range scripts {
		b, err := fs.ReadFile(files, name)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			code := strings.TrimSpace(line)
			if strings.HasPrefix(code, "//") || strings.HasPrefix(code, "*") || strings.HasPrefix(code, "/*") {
				continue
			}
			if m := htmlSinks.FindString(code); m != "" {
				t.Errorf("%s:%d uses %s: build elements with dom.js (text only)", name, i+1, m)
			}
		}
	}
}

// TestScreensAreSelfContained: the page loads only its own modules and
// styles, every module it imports is embedded, and the handler serves each
// with its type; nothing is fetched from elsewhere.
func TestScreensAreSelfContained(t *testing.T) {
	files := frontend.Files()
	c := console.New(nil, console.Options{}) // assets only: the hub is not reached
	index := string(newRecorderGet(t, c, "/"))
	refs := regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllStringSubmatch(index, -1)
	imports := regexp.MustCompile(`(?m)^\s*import\b[^"']*["']([^"']+)["']`)
	seen := map[string]bool{}
	var queue []string
	for _, r := range refs {
		queue = append(queue, r[1])
	}
	for len(queue) > 0 {
		ref := queue[0]
		queue = queue[1:]
		if !strings.HasPrefix(ref, "/") && !strings.HasPrefix(ref, "./") {
			t.Errorf("the page refers to %q: only its own files may load", ref)
			continue
		}
		name := path.Clean(strings.TrimPrefix(strings.TrimPrefix(ref, "."), "/"))
		if seen[name] {
			continue
		}
		seen[name] = true
		b, err := fs.ReadFile(files, name)
		if err != nil {
			t.Errorf("%s is referred to but not embedded", name)
			continue
		}
		newRecorderGet(t, c, "/"+name)
		if strings.HasSuffix(name, ".js") {
			for _, m := range imports.FindAllStringSubmatch(string(b), -1) {
				queue = append(queue, m[1])
			}
		}
	}
	for _, want := range []string{"app.js", "api.js", "approval.js", "dom.js", "style.css"} {
		if !seen[want] {
			t.Errorf("the page never loads %s", want)
		}
	}
	names, _ := fs.Glob(files, "*")
	if slices.Contains(names, "tsconfig.json") || slices.Contains(names, "embed.go") {
		t.Errorf("the embedded assets include build files: %v", names)
	}
	for _, target := range []string{"/../go.mod", "/go.mod", "/embed.go", "/tsconfig.json"} {
		w := httptest.NewRecorder()
		c.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://wails.localhost"+target, nil))
		if w.Code == http.StatusOK {
			t.Errorf("GET %s was served", target)
		}
	}
}
