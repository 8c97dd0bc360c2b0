package e2e

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/scrub"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

const mcpSecret = `s3cr3t/T0k+n="q"&x%y`

// leaks names the forms of mcpSecret in text (the scrubber's list and
// encodings computed here), also with line breaks (real or \n) taken out.
func leaks(text string) []string {
	v := mcpSecret
	forms := map[string]string{
		"raw":         v,
		"base64":      base64.StdEncoding.EncodeToString([]byte(v)),
		"base64url":   base64.RawURLEncoding.EncodeToString([]byte(v)),
		"hex":         hex.EncodeToString([]byte(v)),
		"query":       url.QueryEscape(v),
		"query-twice": url.QueryEscape(url.QueryEscape(v)),
		"base32":      base32.StdEncoding.EncodeToString([]byte(v)),
	}
	var pct, u, x, dec, hexref strings.Builder
	for i := range len(v) {
		fmt.Fprintf(&pct, "%%%02x", v[i])
		fmt.Fprintf(&x, `\x%02x`, v[i])
	}
	for _, r := range v {
		fmt.Fprintf(&u, `\u%04x`, r)
		fmt.Fprintf(&dec, "&#%d;", r)
		fmt.Fprintf(&hexref, "&#x%x;", r)
	}
	rev := []byte(v)
	slices.Reverse(rev)
	forms["percent"], forms["PERCENT"] = pct.String(), strings.ToUpper(pct.String())
	forms[`\u`], forms[`\x`], forms["&#"], forms["&#x"] = u.String(), x.String(), dec.String(), hexref.String()
	forms["reversed"] = string(rev)
	for i, f := range scrub.Forms(v) {
		forms[fmt.Sprintf("scrub.Forms[%d]", i)] = f
	}
	unwrapped := strings.NewReplacer("\r", "", "\n", "", `\r`, "", `\n`, "").Replace(text)
	var found []string
	for name, f := range forms {
		if strings.Contains(text, f) || strings.Contains(unwrapped, f) {
			found = append(found, name)
		}
	}
	if len(found) == 0 && detector.Contains(text) {
		found = append(found, "a form the scrubber decodes (escapes, runs, a chain of them)")
	}
	return found
}

// detector finds mcpSecret in every form the scrubber decodes, which its
// own fuzz tests check against independent decoders.
var detector = scrub.New(mcpSecret)

// TestInvariantI1OverMCP: through a real MCP client (SDK 1.x over stdio),
// code that joins the two halves an upstream gave of its credential, logs
// it, returns it raw, as btoa() and hex, passes it to a write that pauses,
// throws it, and decodes the forms the upstream hid it in: no execute result
// holds a form of it, including a resume served by a process that never
// called the upstream itself.
func TestInvariantI1OverMCP(t *testing.T) {
	t.Parallel()
	h := newHub(t)
	h.cli(append([]string{"hub", "add", "--yes", "--namespace", "leaky", "--secret-env", "SCRIPTED_TOKEN",
		"--env", "SCRIPTED_LEAK=SCRIPTED_TOKEN", "--env", "SCRIPTED_CORPUS=1", "--env", "SCRIPTED_TOOLS=4", "--"}, testenv.Scripted(t)...)...)
	noKeyring := "NO_KEYRING=1"
	auth := exec.Command(binPath, "hub", "auth", "leaky")
	auth.Env = append(h.env(), noKeyring)
	auth.Stdin = strings.NewReader(mcpSecret + "\n")
	if out, err := auth.CombinedOutput(); err != nil {
		t.Fatalf("hub auth: %v\n%s", err, out)
	}
	clean := func(what string, r toolResult) {
		t.Helper()
		if len(r.raw) == 0 {
			t.Fatalf("%s: no result line", what)
		}
		if found := leaks(string(r.raw)); len(found) > 0 {
			t.Errorf("the secret reached the MCP client (%s) as %v: %s", what, found, r.raw)
		}
		if !strings.Contains(string(r.raw), "[secret]") {
			t.Errorf("%s: no [secret] where the secret was: %s", what, r.raw)
		}
	}

	c := h.repl(t, noKeyring)
	joined := c.call("execute", map[string]any{"code": `
const s = (await leaky.leakPart({part: 1})).half + (await leaky.leakPart({part: 2})).half;
console.log("joined:", s, btoa(s));
const hex = Array.from(s, (ch) => ch.charCodeAt(0).toString(16).padStart(2, "0")).join("");
let wrote;
try { wrote = await leaky.record({item: s}); } catch (e) { wrote = e.code + " " + s; }
return { s, b64: btoa(s), hex, wrote };`})
	if e := joined.Structured; e == nil || e.Status != "awaiting_approval" {
		t.Fatalf("the write did not pause: %s", joined.raw)
	}
	clean("the pending envelope", joined)
	runID := joined.Structured.RunID

	// The person denies in a terminal; a fresh serve process (another
	// agent session) answers the resume from the store.
	approve := exec.Command(binPath, "hub", "approve", runID, "--choice", "deny")
	approve.Env = append(h.env(), noKeyring)
	if out, err := approve.CombinedOutput(); err != nil {
		t.Fatalf("hub approve: %v\n%s", err, out)
	}
	c2 := h.repl(t, noKeyring)
	resumed := c2.call("execute", map[string]any{"resume": runID})
	if e := resumed.Structured; e == nil || e.Status != "completed" {
		t.Fatalf("resume: %s", resumed.raw)
	}
	clean("the resumed envelope, from another process", resumed)

	thrown := c.call("execute", map[string]any{"code": `
const s = (await leaky.leakPart({part: 1})).half + (await leaky.leakPart({part: 2})).half;
throw new Error("no to " + s + " " + btoa(s));`})
	if e := thrown.Structured; e == nil || e.Status != "failed" {
		t.Fatalf("thrown: %s", thrown.raw)
	}
	clean("a failed run", thrown)

	corpus := c.call("execute", map[string]any{"code": `
const tryAtob = (s) => { try { return atob(s.replace(/\n/g, "")); } catch (e) { return "not base64: " + s; } };
const esc = await leaky.leakEscaped({});
const encoded = await leaky.leakEncoded({});
const forms = await leaky.leakForms({});
const bigH = await leaky.leakBig({}); // over 64 KB: a handle, read whole
let big = "";
for (let off = 0; off < bigH.size; off += 65536) big += await hub.read(bigH, {offset: off, length: 65536});
const at = big.search(/[^x]/);
const dec = {
  token: esc.token, header: esc.header, base32: forms.base32,
  wrapped: tryAtob(forms.wrapped), mime: tryAtob(forms.mime),
  doubleURL: decodeURIComponent(decodeURIComponent(forms.doubleURL)),
  around: big.slice(at - 10, at + 40),
  encoded,
};
console.log(JSON.stringify(dec));
return dec;`})
	if e := corpus.Structured; e == nil || e.Status != "completed" {
		t.Fatalf("corpus: %s", corpus.raw)
	}
	clean("the corpus run", corpus)
	if !strings.Contains(string(corpus.raw), "pct-lower ") || !strings.Contains(string(corpus.raw), "b64url ") {
		t.Errorf("the corpus run does not show leak-encoded's lines: %s", corpus.raw)
	}
	noLeakUnder(t, filepath.Join(h.home, "hub"))
}

// TestInvariantI1SelfDescription: an upstream handed its credential writes
// it into how it describes itself (server name and version, instructions, a
// tool's title, description, schemas and annotations, and as hex in a tool's
// name). What search and describe show a real MCP client holds no form of
// it, nor does the CLI's describe or anything the hub stored outside its
// secret store. The tool named with the credential is left out; its
// siblings stay callable.
func TestInvariantI1SelfDescription(t *testing.T) {
	t.Parallel()
	h := newHub(t)
	noKeyring := "NO_KEYRING=1"
	add := exec.Command(binPath, append([]string{"hub", "add", "--yes", "--auth", "--namespace", "leaky", "--secret-env", "SCRIPTED_TOKEN",
		"--env", "SCRIPTED_LEAK=SCRIPTED_TOKEN", "--env", "SCRIPTED_LEAK_LIST=1", "--"}, testenv.Scripted(t)...)...)
	add.Env = append(h.env(), noKeyring)
	add.Stdin = strings.NewReader(mcpSecret + "\n")
	out, err := add.CombinedOutput()
	if err != nil {
		t.Fatalf("hub add --auth: %v\n%s", err, out)
	}
	shown := map[string]string{"hub add": string(out)}

	c := h.repl(t, noKeyring)
	for what, r := range map[string]toolResult{
		"search":   c.call("search", map[string]any{"query": "describes itself with the credential"}),
		"describe": c.call("describe", map[string]any{"targets": []string{"leaky"}}),
		"execute": c.call("execute", map[string]any{"code": `
return [await leaky.echo({message: "hi"}), await hub.describe("leaky.leakSelf")];`}),
	} {
		if r.IsError || len(r.raw) == 0 {
			t.Fatalf("%s failed: %s", what, r.raw)
		}
		shown["MCP "+what] = string(r.raw)
	}
	shown["hub describe"] = h.cli("hub", "describe", "leaky")
	shown["hub list --json"] = h.cli("hub", "list", "--json")
	for what, text := range shown {
		if found := leaks(text); len(found) > 0 {
			t.Errorf("%s shows the credential as %v:\n%s", what, found, text)
		}
	}
	if d := shown["MCP describe"]; !strings.Contains(d, "leakSelf") || !strings.Contains(d, "[secret]") {
		t.Errorf("describe does not show leakSelf with [secret] where the credential was:\n%s", d)
	}
	if d := shown["MCP describe"]; strings.Contains(d, "leak_") {
		t.Errorf("describe shows the tool named with the credential:\n%s", d)
	}
	if e := shown["MCP execute"]; !strings.Contains(e, "Echo: hi") {
		t.Errorf("the source's other tools stopped working:\n%s", e)
	}

	noLeakUnder(t, filepath.Join(h.home, "hub"))
}

// noLeakUnder fails the test for each file under dir, but the secret
// store's fallback file, that holds a form of mcpSecret.
func noLeakUnder(t *testing.T, dir string) {
	t.Helper()
	// A file the hub is writing may be renamed between the listing and
	// the read (a record's temporary file): ReadFiles reads the directory
	// again, so the file under its new name is read too.
	err := testenv.ReadFiles(dir, func(path string, b []byte) {
		if filepath.Base(path) == "secrets.json" {
			return
		}
		if found := leaks(string(b)); len(found) > 0 {
			t.Errorf("%s holds the credential as %v", path, found)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestInvariantI1StoredCredentialReadBack: a prompt-injected model reads
// back the credentials the hub stores, through another source's read-only
// file tool (reads run, no person is asked): the fallback secrets.json and
// a harness config that still holds the token it was imported from. The
// serve process has never called the source whose credential it is. No
// form of it reaches the client or the run's record on disk.
func TestInvariantI1StoredCredentialReadBack(t *testing.T) {
	t.Parallel()
	h := newHub(t)
	noKeyring := "NO_KEYRING=1"
	add := exec.Command(binPath, append([]string{"hub", "add", "--yes", "--auth", "--namespace", "leaky", "--secret-env", "SCRIPTED_TOKEN", "--"}, testenv.Scripted(t)...)...)
	add.Env = append(h.env(), noKeyring)
	add.Stdin = strings.NewReader(mcpSecret + "\n")
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("hub add --auth: %v\n%s", err, out)
	}
	secrets := filepath.Join(h.home, "hub", "secrets.json")
	if b, err := os.ReadFile(secrets); err != nil || len(leaks(string(b))) == 0 {
		t.Fatalf("the credential is not in the fallback file %s (%v): the test reads nothing back", secrets, err)
	}
	harness := filepath.Join(h.home, "claude.json")
	cfg := fmt.Sprintf(`{"mcpServers": {"leaky": {"command": "node", "env": {"SCRIPTED_TOKEN": %q}}}}`, mcpSecret)
	if err := os.WriteFile(harness, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	h.cli(append([]string{"hub", "add", "--yes", "--namespace", "fs", "--"}, testenv.Filesystem(t, h.home)...)...)

	c := h.repl(t, noKeyring)
	r := c.call("execute", map[string]any{"code": fmt.Sprintf(`
const store = await fs.readTextFile({path: %q});
const config = await fs.readTextFile({path: %q});
console.log(store.content, config.content);
return {store, config, parsed: JSON.parse(config.content)};`, secrets, harness)})
	if e := r.Structured; e == nil || e.Status != "completed" {
		t.Fatalf("execute: %s", r.raw)
	}
	if found := leaks(string(r.raw)); len(found) > 0 {
		t.Errorf("a stored credential read back through a file tool reached the client as %v: %s", found, r.raw)
	}
	if !strings.Contains(string(r.raw), "[secret]") || !strings.Contains(string(r.raw), "mcpServers") {
		t.Errorf("the files did not come back with [secret] where the credential was: %s", r.raw)
	}
	noLeakUnder(t, filepath.Join(h.home, "hub", "runs"))
}
