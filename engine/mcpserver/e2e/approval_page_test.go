package e2e

import (
	"bytes"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

// pageOut is what page_stdio.mjs prints.
type pageOut struct {
	J2     toolResult
	Resume []toolResult
	Link   string
	Links  []string
	Page   struct {
		Cookie, CSRF string
		Queue        []struct{ Run, ID, Address string }
		Decided      struct{ Run, Call, Choice, Channel, Status, Next string }
		LinkAgain    int
	}
	Final struct {
		toolResult
		Structured *struct {
			envelope
			Decisions []struct{ ID, Address, Choice, Channel string }
		} `json:"structured"`
	}
}

// runPageClient runs page_stdio.mjs with extra environment and returns what
// it printed and everything written to its stderr, serve's log included.
func (h *hubEnv) runPageClient(extraEnv []string, mode string) (pageOut, string) {
	h.t.Helper()
	cmd := exec.Command(testenv.Node(h.t), filepath.Join(clientsDir(h.t), "page_stdio.mjs"), mode)
	cmd.Env = append(h.env(), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		h.t.Fatalf("node page_stdio.mjs %s: %v\nstdout:\n%s\nstderr:\n%s", mode, err, stdout.String(), stderr.String())
	}
	var out pageOut
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		h.t.Fatalf("page_stdio.mjs printed something that is not JSON: %v\n%s", err, stdout.String())
	}
	return out, stderr.String()
}

// TestApprovalPageOpensWhenTheClientCannotAsk is the approval page of the
// run's owner, through a real MCP client without elicitation over `hub serve
// --stdio`: the write pauses the run, serve hands a one-time link to the
// browser (CAPABILITIES_BROWSER, a script that records it) and the envelope
// tells the model a page opened, with `hub approve` as the fallback and no
// URL or token. Two resumes of the still-pending run open no second page.
// The person opens the link, decides once in the page, and the resumed run
// writes once, its envelope showing the decision's channel approval-page.
// Neither the link, its token, the session cookie nor the CSRF token
// appears in any envelope, in serve's log or in any file of the hub (I1).
func TestApprovalPageOpensWhenTheClientCannotAsk(t *testing.T) {
	t.Parallel()
	h := newHub(t)
	rc, wc := h.j2()
	linksFile := filepath.Join(h.work, "links.txt")
	out, stderr := h.runPageClient([]string{
		"CAPABILITIES_NO_BROWSER=",
		"CAPABILITIES_BROWSER=" + testenv.Node(t) + " " + filepath.Join(clientsDir(t), "record_link.mjs"),
		"PAGE_LINKS=" + linksFile,
		"CAPABILITIES_LOG=debug",
	}, "decide")

	e := out.J2.Structured
	if e == nil || e.Status != "awaiting_approval" || len(e.Pending) != 1 || e.Pending[0].Address != "writer.record" {
		t.Fatalf("J2 = %+v %q", e, out.J2.Text)
	}
	for _, want := range []string{"A page opened on the person's screen", "capabilities hub approve " + e.RunID, `execute({resume: "` + e.RunID + `"})`} {
		if !strings.Contains(out.J2.Text, want) {
			t.Errorf("the envelope's text lacks %q:\n%s", want, out.J2.Text)
		}
	}
	for i, r := range out.Resume {
		if r.Text != out.J2.Text || r.Structured == nil || r.Structured.Status != "awaiting_approval" {
			t.Errorf("resume #%d before the decision = %q, want the same pending envelope as J2", i+1, r.Text)
		}
	}
	// One page for the one pending call, whatever the retries.
	if len(out.Links) != 1 {
		t.Errorf("the browser got %d links, want 1 (one page per pending call): %q", len(out.Links), out.Links)
	}
	u, err := url.Parse(out.Link)
	if err != nil || u.Scheme != "http" || u.Hostname() != "127.0.0.1" || u.Query().Get("token") == "" {
		t.Fatalf("the link %q is not a loopback page with a one-time token", out.Link)
	}
	if len(out.Page.Queue) != 1 || out.Page.Queue[0].Run != e.RunID || out.Page.Queue[0].Address != "writer.record" {
		t.Errorf("the page's queue = %+v", out.Page.Queue)
	}
	if d := out.Page.Decided; d.Channel != "approval-page" || d.Choice != "once" || !strings.Contains(d.Next, "resume") {
		t.Errorf("the page's answer to the decision = %+v, want channel approval-page and what happens next (resume)", d)
	}
	if out.Page.LinkAgain != 403 {
		t.Errorf("the link opened again: status %d, want 403", out.Page.LinkAgain)
	}

	f := out.Final.Structured
	if f == nil || f.Status != "completed" || string(f.Result) != `"recorded Echo: from the reader"` {
		t.Fatalf("resume after the decision = %+v %q", f, out.Final.Text)
	}
	type decision struct{ ID, Address, Choice, Channel string }
	var got []decision
	for _, d := range f.Decisions {
		got = append(got, decision(d))
	}
	if diff := cmp.Diff([]decision{{e.Pending[0].ID, "writer.record", "once", "approval-page"}}, got); diff != "" {
		t.Errorf("the final envelope's decisions (-want +got):\n%s", diff)
	}
	if n := lines(t, wc); n != 1 {
		t.Errorf("writer called %d times, want 1", n)
	}
	if n := lines(t, rc); n != 2 {
		t.Errorf("reader called %d times, want 2", n)
	}

	// I1 for the page: what opens it stays between the hub and the browser.
	secrets := map[string]string{
		"link":        out.Link,
		"token":       u.Query().Get("token"),
		"page origin": u.Host,
		"cookie":      out.Page.Cookie[strings.IndexByte(out.Page.Cookie, '=')+1:],
		"CSRF token":  out.Page.CSRF,
	}
	places := map[string]string{"serve's log": stderr}
	for i, r := range append(append([]toolResult{out.J2}, out.Resume...), out.Final.toolResult) {
		b, _ := json.Marshal(r)
		places["envelope #"+string(rune('1'+i))] = string(b)
	}
	fb, _ := json.Marshal(out.Final.Structured)
	places["final envelope"] = string(fb)
	err = testenv.ReadFiles(h.home, func(p string, b []byte) { places[p] = string(b) })
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "opened the approval page") {
		t.Errorf("serve's log (CAPABILITIES_LOG=debug) does not say it opened the page: the leak check would see nothing:\n%s", stderr)
	}
	for what, s := range secrets {
		if len(s) < 8 {
			t.Fatalf("the %s %q is too short to look for", what, s)
		}
		for where, text := range places {
			if strings.Contains(text, s) {
				t.Errorf("the page's %s is in %s", what, where)
			}
		}
	}
}

// TestApprovalPageNotOpened: with CAPABILITIES_NO_BROWSER=1, or on a
// machine with no display and no browser configured, nothing is opened and
// the envelope says why, naming `hub approve`; a resume says the same.
func TestApprovalPageNotOpened(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  []string
		why  string
	}{
		{"turned off", []string{"CAPABILITIES_NO_BROWSER=1"}, "CAPABILITIES_NO_BROWSER=1"},
		{"no display", []string{"CAPABILITIES_NO_BROWSER=", "CAPABILITIES_BROWSER=", "BROWSER=", "DISPLAY=", "WAYLAND_DISPLAY="}, "no display"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.name == "no display" && (runtime.GOOS == "darwin" || runtime.GOOS == "windows") {
				t.Skip("macOS and Windows open pages without a display variable")
			}
			h := newHub(t)
			_, wc := h.j2()
			linksFile := filepath.Join(h.work, "links.txt")
			out, _ := h.runPageClient(append([]string{"PAGE_LINKS=" + linksFile}, tc.env...), "pending")
			e := out.J2.Structured
			if e == nil || e.Status != "awaiting_approval" {
				t.Fatalf("J2 = %+v %q", e, out.J2.Text)
			}
			for _, want := range []string{"No page opened on the person's screen", tc.why, "capabilities hub approve " + e.RunID} {
				if !strings.Contains(out.J2.Text, want) {
					t.Errorf("the envelope's text lacks %q:\n%s", want, out.J2.Text)
				}
			}
			if len(out.Resume) != 1 || out.Resume[0].Text != out.J2.Text {
				t.Errorf("resume = %+v, want the same text", out.Resume)
			}
			if _, err := os.Stat(linksFile); !os.IsNotExist(err) {
				t.Errorf("a browser was started (%s exists)", linksFile)
			}
			if n := lines(t, wc); n != 0 {
				t.Errorf("writer called %d times before a decision", n)
			}
		})
	}
}
