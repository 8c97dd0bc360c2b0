package cli

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/internal/browser"
	"github.com/capabilities-sh/capabilities/store"
)

// recordingBrowser stands for the person's browser: it keeps the links.
type recordingBrowser struct {
	mu    sync.Mutex
	links []string
}

func (b *recordingBrowser) open(link string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.links = append(b.links, link)
	return nil
}

func newTestOpener(t testing.TB) (*pageOpener, *recordingBrowser) {
	t.Helper()
	h := hub.New(store.NewMem(), hub.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	o := newPageOpener(ctx, h, slog.New(slog.DiscardHandler), "127.0.0.1:0")
	b := &recordingBrowser{}
	o.open = b.open
	t.Cleanup(func() { o.Close(); cancel(); h.Close() })
	return o, b
}

// TestPageOpenerOnePagePerPendingCall: the first pending call opens a page
// (a one-time link to a console that answers on loopback); its retries open
// none and still say it is shown; another call opens another; with opening
// turned off nothing opens and the reason is given.
func TestPageOpenerOnePagePerPendingCall(t *testing.T) {
	t.Setenv("CAPABILITIES_NO_BROWSER", "")
	t.Setenv("CAPABILITIES_BROWSER", "unused-the-test-records-links")
	o, b := newTestOpener(t)
	ctx := context.Background()
	for _, step := range []struct {
		run   string
		ids   []string
		links int
	}{
		{"r1", []string{"c3"}, 1},
		{"r1", []string{"c3"}, 1}, // a retry of the same call
		{"r1", []string{"c3"}, 1},
		{"r1", []string{"c3", "c4"}, 2}, // a new call of the same run
		{"r2", []string{"c3"}, 3},       // the same id in another run
	} {
		page, err := o.Open(ctx, step.run, step.ids)
		if err != nil || !page.Shown || page.Why != "" {
			t.Fatalf("Open(%s, %v) = %+v, %v; want shown", step.run, step.ids, page, err)
		}
		if len(b.links) != step.links {
			t.Fatalf("after Open(%s, %v) the browser had %d links, want %d", step.run, step.ids, len(b.links), step.links)
		}
	}
	// Each link opens the page once; the console answers on loopback.
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for i, want := range []int{http.StatusSeeOther, http.StatusForbidden} {
		res, err := c.Get(b.links[0])
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("opening the first link, try %d: status %d, want %d", i+1, res.StatusCode, want)
		}
	}

	t.Setenv("CAPABILITIES_NO_BROWSER", "1")
	page, err := o.Open(ctx, "r3", []string{"c1"})
	if err != nil || page.Shown || !strings.Contains(page.Why, "CAPABILITIES_NO_BROWSER=1") {
		t.Errorf("Open with CAPABILITIES_NO_BROWSER=1 = %+v, %v", page, err)
	}
	if len(b.links) != 3 {
		t.Errorf("the browser got a link with opening turned off")
	}
}

// BenchmarkPendingCallToOpener is a pending call's way to the browser: from
// Open to the link handed to the opener process (CAPABILITIES_BROWSER=true,
// started, not waited for). cold starts the process's console first; warm
// finds it running. The budget is 50 ms.
func BenchmarkPendingCallToOpener(b *testing.B) {
	b.Setenv("CAPABILITIES_NO_BROWSER", "")
	b.Setenv("CAPABILITIES_BROWSER", "true")
	ctx := context.Background()
	b.Run("cold", func(b *testing.B) {
		h := hub.New(store.NewMem(), hub.Options{})
		defer h.Close()
		i := 0
		for b.Loop() {
			b.StopTimer()
			o := newPageOpener(ctx, h, slog.New(slog.DiscardHandler), "127.0.0.1:0")
			b.StartTimer()
			if page, err := o.Open(ctx, "r1", []string{"c" + strconv.Itoa(i)}); err != nil || !page.Shown {
				b.Fatalf("Open = %+v, %v", page, err)
			}
			b.StopTimer()
			o.Close()
			b.StartTimer()
			i++
		}
	})
	b.Run("warm", func(b *testing.B) {
		o, _ := newTestOpener(b)
		o.open = browser.Open
		if _, err := o.Open(ctx, "r0", []string{"c0"}); err != nil {
			b.Fatal(err)
		}
		i := 0
		for b.Loop() {
			if page, err := o.Open(ctx, "r1", []string{"c" + strconv.Itoa(i)}); err != nil || !page.Shown {
				b.Fatalf("Open = %+v, %v", page, err)
			}
			i++
		}
	})
}
