package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/app"
)

// TestHelpNamesEveryFlag builds capabilities-desktop and runs it with --help
// and -h: exit 0, and the text on stdout says what the app is, names every
// flag of its flag set with that flag's usage (a flag added without help
// fails here), every environment variable the app and this command read
// (os.Getenv in app/ and cmd/capabilities-desktop), and the exit codes. A
// wrong command line exits 2 pointing to --help. Before, --help was refused
// with a one-line usage and exit 2.
func TestHelpNamesEveryFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "capabilities-desktop")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run := func(args ...string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		// No display: were the help not taken first, the app would exit 2.
		cmd.Env = append(os.Environ(), "DISPLAY=", "WAYLAND_DISPLAY=", "CAPABILITIES_HOME="+t.TempDir())
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			code = ee.ExitCode()
		default:
			t.Fatal(err)
		}
		return o.String(), e.String(), code
	}

	var opts app.Options
	fs := flags(&opts)
	envs := readEnv(t)
	for _, arg := range []string{"--help", "-h", "-help"} {
		out, errOut, code := run(arg)
		if code != 0 || errOut != "" {
			t.Fatalf("%s: exit %d, stderr %q; want exit 0 and the help on stdout", arg, code, errOut)
		}
		for _, want := range []string{"tray", "notification", "approval window", "review window", "agents' MCP configs",
			"serve --stdio", "capabilities hub serve --http", "Exit codes:", "-h, --help"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s does not say %q:\n%s", arg, want, out)
			}
		}
		fs.VisitAll(func(f *flag.Flag) {
			_, usage := flag.UnquoteUsage(f)
			if len(strings.Fields(usage)) < 4 {
				t.Errorf("flag --%s has no real usage (%q): say what it does", f.Name, f.Usage)
			}
			if !strings.Contains(out, "--"+f.Name) || !strings.Contains(out, usage) {
				t.Errorf("%s does not name --%s with its usage %q:\n%s", arg, f.Name, usage, out)
			}
		})
		env := out[strings.Index(out, "Environment:"):]
		for _, v := range envs {
			if !regexp.MustCompile(`\b` + v + `\b`).MatchString(env) {
				t.Errorf("%s does not name the environment variable %s the app reads", arg, v)
			}
		}
		for _, c := range []string{"  0  ", "  1  ", "  2  "} {
			if !strings.Contains(out, c) {
				t.Errorf("%s does not explain exit code %q", arg, strings.TrimSpace(c))
			}
		}
	}
	for _, args := range [][]string{{"--no-such-flag"}, {"extra"}, {"--port", "0"}} {
		out, errOut, code := run(args...)
		if code != 2 || out != "" || !strings.Contains(errOut, "--help") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and a line pointing to --help", args, code, out, errOut)
		}
	}
}

// readEnv lists the variables the app's code reads with os.Getenv.
func readEnv(t *testing.T) []string {
	t.Helper()
	re := regexp.MustCompile(`os\.(?:Getenv|LookupEnv)\("([A-Za-z_0-9]+)"\)`)
	seen := map[string]bool{}
	for _, dir := range []string{".", filepath.Join("..", "..", "app")} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("reading %s: %v", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range re.FindAllStringSubmatch(string(b), -1) {
				seen[m[1]] = true
			}
		}
	}
	var vs []string
	for v := range seen {
		vs = append(vs, v)
	}
	sort.Strings(vs)
	if len(vs) < 3 {
		t.Fatalf("found only %q read from the environment: the pattern no longer matches the code", vs)
	}
	return vs
}
