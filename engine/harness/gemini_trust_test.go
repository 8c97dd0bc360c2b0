package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeminiTrust: the rules of Gemini CLI 0.61.0 (checkPathTrust); the
// journey connect_gemini_trust.txtar holds them against the real CLI.
func TestGeminiTrust(t *testing.T) {
	home := t.TempDir()
	proj := filepath.Join(home, "work", "proj")
	if err := os.MkdirAll(filepath.Join(proj, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(home, ".gemini", name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	vars := map[string]string{"GEMINI_CLI_SYSTEM_SETTINGS_PATH": filepath.Join(home, "none", "settings.json")}
	env := Env{Home: home, Getenv: func(k string) string { return vars[k] }, GOOS: "linux"}
	check := func(dir string, want bool, why string) {
		t.Helper()
		got, gotWhy, fix := GeminiTrust(env, dir)
		if got != want || !strings.Contains(gotWhy, why) || (!got && fix == "") {
			t.Errorf("GeminiTrust(%s) = %v, %q, %q; want %v, %q", dir, got, gotWhy, fix, want, why)
		}
	}
	check(proj, false, "does not exist: Gemini trusts no folder yet")
	write("trustedFolders.json", `{"`+filepath.Join(home, "work")+`": "TRUST_FOLDER"}`)
	check(proj, true, "")
	check(home, false, "does not trust this folder")
	write("trustedFolders.json", `{
  // a comment, as Gemini reads them
  "`+filepath.Join(home, "work")+`": "TRUST_FOLDER",
  "`+proj+`": "DO_NOT_TRUST"
}`)
	check(filepath.Join(proj, "sub"), false, "DO_NOT_TRUST")
	write("trustedFolders.json", `{"`+filepath.Join(proj, "x")+`": "TRUST_PARENT"}`)
	check(filepath.Join(proj, "sub"), true, "")
	write("trustedFolders.json", `{"`+proj+`": "MAYBE"}`)
	check(proj, false, "not one of TRUST_FOLDER")

	write("settings.json", `{"security": {"folderTrust": {"enabled": false}}}`)
	check(proj, true, "")
	// A system settings file others can write is skipped, as Gemini does.
	sys := filepath.Join(home, "etc")
	if err := os.MkdirAll(sys, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sys, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sys, "settings.json"), []byte(`{"security": {"folderTrust": {"enabled": true}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	vars["GEMINI_CLI_SYSTEM_SETTINGS_PATH"] = filepath.Join(sys, "settings.json")
	check(proj, true, "")

	vars["GEMINI_CLI_TRUST_WORKSPACE"] = "false"
	check(proj, false, "GEMINI_CLI_TRUST_WORKSPACE=false")
	write("settings.json", `{}`)
	vars["GEMINI_CLI_TRUST_WORKSPACE"] = "true"
	check(home, true, "")
}
