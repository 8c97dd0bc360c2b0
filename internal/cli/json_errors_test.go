package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/store"
	"github.com/spf13/cobra"
)

// TestEveryJSONCommandFailsWithAJSONError walks every command that has a
// --json flag and runs it twice with --json: once with an unknown flag (a
// usage error, exit 2) and once with the bad input of its row below, against
// a hub with no sources. Each time stdout must be one JSON object
// {"error":{"code":…,"message":…}} with the expected code, and the exit code
// 1 or 2 as without --json. A command with --json and no row fails the test.
func TestEveryJSONCommandFailsWithAJSONError(t *testing.T) {
	bigCode := strings.Repeat(" ", 64<<10+1)
	// The bad input of each command (its path after "capabilities"), and
	// what it must say.
	bad := map[string]struct {
		args []string
		home string // "hub": a hub with no sources; "none": no hub; "file": a file where the home should be
		code string
		exit int
	}{
		"hub init":            {nil, "file", codeError, 1},
		"hub add":             {[]string{"--yes", "http://127.0.0.1:1/mcp"}, "hub", codeUpstreamUnavailable, 1},
		"hub import":          {[]string{"--yes"}, "none", codeNoHub, 1},
		"hub list":            {nil, "none", codeNoHub, 1},
		"hub remove":          {[]string{"nope"}, "hub", codeNotFound, 1},
		"hub refresh":         {[]string{"nope"}, "hub", codeNotFound, 1},
		"hub call":            {[]string{"nope.echo", "{}"}, "hub", codeNotFound, 1},
		"hub search":          {[]string{"--limit", "26", "echo"}, "hub", codeUsage, 2},
		"hub describe":        {[]string{"nope.echo"}, "hub", codeNotFound, 1},
		"hub policy list":     {[]string{"extra"}, "hub", codeUsage, 2},
		"hub policy set":      {[]string{"nope.echo", "maybe"}, "hub", codeUsage, 2},
		"hub review":          {[]string{"nope"}, "hub", codeNotFound, 1},
		"hub exec":            {[]string{bigCode}, "hub", codeCodeTooLarge, 1},
		"hub runs":            {[]string{"--status", "bogus"}, "hub", codeUsage, 2},
		"hub runs show":       {[]string{"r0123abcd"}, "hub", codeNotFound, 1},
		"hub runs prune":      {[]string{"--older-than", "soon"}, "hub", codeUsage, 2},
		"hub cancel":          {[]string{"r0123abcd"}, "hub", codeNotFound, 1},
		"hub approve":         {[]string{"r0123abcd"}, "hub", codeNotFound, 1},
		"hub auth":            {[]string{"nope"}, "hub", codeNotFound, 1},
		"hub connections":     {[]string{"nope"}, "hub", codeNotFound, 1},
		"hub doctor":          {[]string{"extra"}, "hub", codeUsage, 2},
		"hub skills add":      {[]string{"./no-such-folder"}, "hub", codeUsage, 2},
		"hub skills list":     {nil, "none", codeNoHub, 1},
		"hub skills remove":   {[]string{"nope"}, "hub", codeNotFound, 1},
		"hub profiles add":    {[]string{"Bad"}, "hub", codeUsage, 2},
		"hub profiles list":   {nil, "none", codeNoHub, 1},
		"hub profiles show":   {[]string{"nope"}, "hub", codeNotFound, 1},
		"hub profiles edit":   {[]string{"nope"}, "hub", codeNotFound, 1},
		"hub profiles remove": {[]string{"nope"}, "hub", codeNotFound, 1},
		"hub pause":           {nil, "none", codeNoHub, 1},
		"hub resume":          {nil, "none", codeNoHub, 1},
		"hub connect":         {[]string{"--client", "nope"}, "hub", codeUsage, 2},
		"hub disconnect":      {[]string{"--client", "nope"}, "hub", codeUsage, 2},
		"hub rollback":        {nil, "hub", codeError, 1},
		"rollback":            {nil, "hub", codeError, 1},
		"list":                {nil, "none", codeNoHub, 1},
		"doctor":              {[]string{"extra"}, "hub", codeUsage, 2},
		"login":               {[]string{"--issuer", "github.com"}, "none", codeUsage, 2},
		"stack install":       {[]string{"--yes", "nope"}, "hub", codeUsage, 2},
		"stack uninstall":     {[]string{"nope"}, "hub", codeNotFound, 1},
		"stack push":          {nil, "none", codeNoHub, 1},

		"hub secrets status":     {nil, "hub", codeError, 1},
		"hub secrets rotate-key": {nil, "hub", codeUsage, 2},
		"hub secrets seal":       {nil, "hub", codeError, 1},

		"hub login":  {[]string{"http://hub.example.com"}, "none", codeUsage, 2},
		"hub push":   {nil, "none", codeNoHub, 1},
		"hub status": {nil, "none", codeNoHub, 1},
	}
	t.Setenv("NO_KEYRING", "1")
	t.Setenv("CAPABILITIES_LOG", "error")

	var paths []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("json") != nil {
			paths = append(paths, strings.TrimPrefix(c.CommandPath(), "capabilities "))
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(&env{stdout: io.Discard, stderr: io.Discard}))
	if len(paths) < 15 {
		t.Fatalf("found only %d commands with --json: %v", len(paths), paths)
	}

	run := func(t *testing.T, home string, args []string, wantCode string, wantExit int) {
		t.Helper()
		t.Setenv("CAPABILITIES_HOME", home)
		var stdout, stderr bytes.Buffer
		code := Main(args, strings.NewReader(""), &stdout, &stderr)
		if code != wantExit {
			t.Errorf("capabilities %s exited %d, want %d; stderr:\n%s", shortArgs(args), code, wantExit, stderr.String())
		}
		var got jsonError
		dec := json.NewDecoder(&stdout)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("capabilities %s: stdout is not a JSON error object (%v):\n%s", shortArgs(args), err, stdout.String())
		}
		if dec.More() {
			t.Errorf("capabilities %s: more than one JSON document on stdout", shortArgs(args))
		}
		if got.Error.Code != wantCode || got.Error.Message == "" {
			t.Errorf("capabilities %s: error %+v, want code %q and a message; stderr:\n%s", shortArgs(args), got.Error, wantCode, stderr.String())
		}
		if !strings.Contains(stderr.String(), got.Error.Message) {
			t.Errorf("capabilities %s: stderr does not say the error too:\n%s", shortArgs(args), stderr.String())
		}
	}

	for _, path := range paths {
		t.Run(strings.ReplaceAll(path, " ", "_"), func(t *testing.T) {
			words := strings.Fields(path)
			run(t, t.TempDir(), append(append(words[:len(words):len(words)], "--json"), "--no-such-flag"), codeUsage, exitUsage)

			b, ok := bad[path]
			if !ok {
				t.Fatalf("%s has --json but no row in this test's table: give it bad input and the code it must print", path)
			}
			home := t.TempDir()
			switch b.home {
			case "hub":
				st, _, err := store.Init(filepath.Join(home, "hub"))
				if err != nil {
					t.Fatal(err)
				}
				st.Close()
			case "file":
				home = filepath.Join(home, "a-file")
				if err := os.WriteFile(home, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			run(t, home, append(append(words[:len(words):len(words)], "--json"), b.args...), b.code, b.exit)
		})
	}
	for path := range bad {
		found := false
		for _, p := range paths {
			found = found || p == path
		}
		if !found {
			t.Errorf("the table names %q, which has no --json flag", path)
		}
	}
}

func shortArgs(args []string) string {
	s := strings.Join(args, " ")
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}
