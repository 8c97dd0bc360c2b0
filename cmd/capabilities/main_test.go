package main

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/internal/cli"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"capabilities": func() { os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the CLI journeys in testdata/script against real MCP
// servers from testdata/npm.
//
// Variables: $HOME and $CAPABILITIES_HOME point into the script's work dir,
// $NODE is node, $NM is testdata/npm/node_modules/@modelcontextprotocol,
// $SCRIPTED is testdata/upstreams/scripted.mjs, $OAUTHRS is
// testdata/upstreams/oauth-resource.mjs (an MCP server behind OAuth), $HARNESSES is
// testdata/harnesses/node_modules/.bin (the real claude, codex and gemini
// CLIs; set only when they are installed), and the environment those CLIs
// need to run here without network, login or prompt (testenv.HarnessEnv).
// Condition: `[harnesses]` is true when the real CLIs are installed; when
// they are missing it is false outside CI and an error in CI (CI=true), with
// a message saying to run scripts/setup.sh --tests.
// Extra commands: `modes DIR` checks dirs are 700 and files 600 under DIR;
// `exits N PROG [ARGS…]` runs a program like exec and checks that it exited
// with code N; `freeport NAME` sets $NAME to a free loopback port; `waitport PORT` waits
// until something listens there; `unchanged FILE` / `snapshot FILE` compare a
// file with an earlier copy; `expand FILE…` puts the script's variables in
// a file's @NAME@ placeholders; `sha256 FILE…` prints each file's SHA-256 as
// sha256sum does; `postgres NAME…` starts a real PostgreSQL for the script
// and sets $NAME to a new database's URL (postgres_script_test.go), and
// `pgexec URL SQL` runs a statement on one; `capture NAME REGEXP` sets
// $NAME to REGEXP's first group in the last stdout.
func TestScripts(t *testing.T) {
	node := testenv.Node(t)
	nm := testenv.NPMPath(t, "@modelcontextprotocol")
	scripted := filepath.Join(testenv.Root(t), "testdata", "upstreams", "scripted.mjs")
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("CAPABILITIES_HOME", filepath.Join(env.WorkDir, "home"))
			// Starting node is slow on a loaded machine: scale how long the
			// hub waits for an upstream's start (a script may set its own).
			env.Setenv("CAPABILITIES_CONNECT_TIMEOUT", testenv.Timeout(source.DefaultConnectTimeout).String())
			env.Setenv("NODE", node)
			env.Setenv("NM", nm)
			env.Setenv("SCRIPTED", scripted)
			env.Setenv("OAUTHRS", filepath.Join(testenv.Root(t), "testdata", "upstreams", "oauth-resource.mjs"))
			env.Setenv("PATH", filepath.Dir(node)+string(os.PathListSeparator)+env.Getenv("PATH"))
			if bin, err := testenv.Harnesses(); err == nil {
				env.Setenv("HARNESSES", bin)
			}
			for _, kv := range testenv.HarnessEnv(testenv.Timeout(source.DefaultConnectTimeout)) {
				k, v, _ := strings.Cut(kv, "=")
				env.Setenv(k, v)
			}
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "postgres" {
				return condPostgres()
			}
			if cond != "harnesses" {
				return false, fmt.Errorf("unknown condition %q", cond)
			}
			if _, err := testenv.Harnesses(); err != nil {
				if os.Getenv("CI") == "true" {
					return false, err
				}
				return false, nil
			}
			return true, nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"modes":    cmdModes,
			"freeport": cmdFreePort,
			"waitport": cmdWaitPort,
			"waitfile": cmdWaitFile,
			"snapshot": cmdSnapshot,
			"lines":    cmdLines,
			"nosecret": cmdNoSecret,
			"runid":    cmdRunID,
			"exits":    cmdExits,
			"expand":   cmdExpand,
			"sha256":   cmdSHA256,
			"postgres": cmdPostgres,
			"pgexec":   cmdPgExec,
			"pgdump":   cmdPgDump,
			"capture":  cmdCapture,
			"sleep": func(ts *testscript.TestScript, neg bool, args []string) {
				d, err := time.ParseDuration(args[0])
				if err != nil {
					ts.Fatalf("sleep: %v", err)
				}
				time.Sleep(d)
			},
			"unchanged": func(ts *testscript.TestScript, neg bool, args []string) {
				for _, f := range args {
					now := ts.ReadFile(f)
					was := ts.ReadFile(f + ".snapshot")
					if (now == was) == neg {
						ts.Fatalf("%s changed: %v", f, now != was)
					}
				}
			},
		},
	})
}

func cmdModes(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: modes DIR")
	}
	probs, n := store.CheckModes(ts.MkAbs(args[0]))
	if (len(probs) > 0) != neg {
		ts.Fatalf("modes: %v", probs)
	}
	ts.Logf("checked the modes of %d entries", n)
}

// cmdExits runs a program and checks its exit code: `exits N PROG [ARGS…]`.
// Its stdout and stderr are then checked as after exec.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits N PROG [ARGS…]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: %v", err)
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with code %d, want %d", args[1], got, want)
	}
}

func cmdFreePort(ts *testscript.TestScript, neg bool, args []string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ts.Fatalf("freeport: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ts.Setenv(args[0], strconv.Itoa(port))
}

func cmdWaitPort(ts *testscript.TestScript, neg bool, args []string) {
	addr := "127.0.0.1:" + ts.Getenv(strings.TrimPrefix(args[0], "$"))
	if _, err := strconv.Atoi(args[0]); err == nil {
		addr = "127.0.0.1:" + args[0]
	}
	wait := testenv.Timeout(15 * time.Second)
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	ts.Fatalf("nothing listens on %s after %v", addr, wait)
}

// cmdWaitFile waits for a file to exist: `waitfile PATH` (a background
// command writes it after it listens).
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfile PATH")
	}
	p := ts.MkAbs(args[0])
	wait := testenv.Timeout(15 * time.Second)
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(p); err == nil {
			return
		}
	}
	ts.Fatalf("%s does not exist after %v", args[0], wait)
}

// cmdExpand replaces @NAME@ in files with the script's variable NAME:
// `expand FILE…` (a config file may hold ${VAR} of its own).
func cmdExpand(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: expand FILE…")
	}
	at := regexp.MustCompile(`@([A-Z_]+)@`)
	for _, f := range args {
		b := at.ReplaceAllStringFunc(ts.ReadFile(f), func(m string) string { return ts.Getenv(m[1 : len(m)-1]) })
		if err := os.WriteFile(ts.MkAbs(f), []byte(b), 0o600); err != nil {
			ts.Fatalf("expand: %v", err)
		}
	}
}

// cmdSHA256 prints each file's SHA-256 and name, as sha256sum does:
// `sha256 FILE…`.
func cmdSHA256(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: sha256 FILE…")
	}
	for _, f := range args {
		data, err := os.ReadFile(ts.MkAbs(f))
		if err != nil {
			ts.Fatalf("sha256: %v", err)
		}
		fmt.Fprintf(ts.Stdout(), "%x  %s\n", sha256.Sum256(data), f)
	}
}

func cmdSnapshot(ts *testscript.TestScript, neg bool, args []string) {
	for _, f := range args {
		if err := os.WriteFile(ts.MkAbs(f+".snapshot"), []byte(ts.ReadFile(f)), 0o600); err != nil {
			ts.Fatalf("snapshot: %v", err)
		}
	}
}

// cmdLines checks a file has exactly N non-empty lines: `lines FILE N`.
func cmdLines(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: lines FILE N")
	}
	want, err := strconv.Atoi(args[1])
	if err != nil {
		ts.Fatalf("lines: %v", err)
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	if err != nil {
		ts.Fatalf("lines: %v", err)
	}
	got := 0
	for _, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) != "" {
			got++
		}
	}
	if (got == want) == neg {
		ts.Fatalf("%s has %d lines, want %d", args[0], got, want)
	}
}

// cmdRunID sets $RUN to the id of the newest run.
func cmdRunID(ts *testscript.TestScript, neg bool, args []string) {
	dir := filepath.Join(ts.Getenv("CAPABILITIES_HOME"), "hub", "runs")
	entries, err := os.ReadDir(dir)
	if err != nil {
		ts.Fatalf("runid: %v", err)
	}
	st, err := store.Open(filepath.Dir(dir))
	if err != nil {
		ts.Fatalf("runid: %v", err)
	}
	defer st.Close()
	var newest string
	var at time.Time
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		// Read through the store: a run that called nothing shares its
		// record's file with others (store.PutFinal).
		var r struct {
			CreatedAt time.Time `json:"createdAt"`
		}
		_ = st.Get(context.Background(), store.Runs, strings.TrimSuffix(e.Name(), ".json"), &r)
		if newest == "" || r.CreatedAt.After(at) {
			newest, at = strings.TrimSuffix(e.Name(), ".json"), r.CreatedAt
		}
		_ = info
	}
	if newest == "" {
		ts.Fatalf("runid: no runs in %s", dir)
	}
	ts.Setenv("RUN", newest)
}

// cmdNoSecret checks that a secret appears, in none of its encodings, in the
// last command's stdout/stderr or in files under a path: `nosecret VALUE
// stdout|stderr|PATH…`. The encodings are computed here with the standard
// library, independently of the scrubber; text is also checked with its
// line breaks (real, or JSON's \n and \r) taken out, so a wrapped base64
// counts.
func cmdNoSecret(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: nosecret VALUE|@FILE stdout|stderr|PATH…")
	}
	v := args[0]
	if f, ok := strings.CutPrefix(v, "@"); ok { // the value a file holds (trimmed)
		v = strings.TrimSpace(ts.ReadFile(f))
		if v == "" {
			ts.Fatalf("nosecret: %s is empty: the check would prove nothing", f)
		}
	}
	jsonEsc, _ := json.Marshal(v)
	forms := map[string]string{
		"raw":           v,
		"base64":        base64.StdEncoding.EncodeToString([]byte(v)),
		"base64url":     base64.URLEncoding.EncodeToString([]byte(v)),
		"base64-raw":    base64.RawStdEncoding.EncodeToString([]byte(v)),
		"base64url-raw": base64.RawURLEncoding.EncodeToString([]byte(v)),
		"query-escaped": url.QueryEscape(v),
		"path-escaped":  url.PathEscape(v),
		"hex":           hex.EncodeToString([]byte(v)),
		"HEX":           strings.ToUpper(hex.EncodeToString([]byte(v))),
		"json-escaped":  strings.Trim(string(jsonEsc), `"`),
		"base32":        base32.StdEncoding.EncodeToString([]byte(v)),
		"base32-lower":  strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString([]byte(v))),
		"query-twice":   url.QueryEscape(url.QueryEscape(v)),
	}
	var esc strings.Builder
	for _, r := range v {
		fmt.Fprintf(&esc, `\u%04x`, r)
	}
	forms["json-all-escaped"] = esc.String()
	unwrap := strings.NewReplacer("\r", "", "\n", "", `\r`, "", `\n`, "")
	check := func(where, text string) {
		unwrapped := unwrap.Replace(text)
		for name, f := range forms {
			if strings.Contains(text, f) || strings.Contains(unwrapped, f) {
				ts.Fatalf("the secret (%s form) appears in %s", name, where)
			}
		}
	}
	for _, a := range args[1:] {
		switch a {
		case "stdout", "stderr":
			check(a, ts.ReadFile(a))
		default:
			err := testenv.ReadFiles(ts.MkAbs(a), func(p string, data []byte) { check(p, string(data)) })
			if err != nil {
				ts.Fatalf("nosecret: %v", err)
			}
		}
	}
}
