package secret

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
	"github.com/zalando/go-keyring"
)

// fakeKeychain is a keychain in memory that can fail or hang on demand.
type fakeKeychain struct {
	mu    sync.Mutex
	items map[string]string
	err   error         // returned by every call when set
	hang  chan struct{} // every call blocks until closed, when set
	calls int
}

func (f *fakeKeychain) call() error {
	f.mu.Lock()
	f.calls++
	hang, err := f.hang, f.err
	f.mu.Unlock()
	if hang != nil {
		<-hang
	}
	return err
}

func (f *fakeKeychain) Get(service, account string) (string, error) {
	if err := f.call(); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.items[service+"\x00"+account]
	if !ok {
		return "", keyring.ErrNotFound
	}
	return v, nil
}

func (f *fakeKeychain) Set(service, account, value string) error {
	if err := f.call(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.items == nil {
		f.items = map[string]string{}
	}
	f.items[service+"\x00"+account] = value
	return nil
}

func (f *fakeKeychain) Delete(service, account string) error {
	if err := f.call(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.items[service+"\x00"+account]; !ok {
		return keyring.ErrNotFound
	}
	delete(f.items, service+"\x00"+account)
	return nil
}

func (f *fakeKeychain) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func newLog() (*slog.Logger, *testenv.Buffer) {
	b := &testenv.Buffer{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}

const fileWarning = "secrets are kept in a file, not in the OS keychain"

var errNoService = errors.New(`the name org.freedesktop.secrets was not provided by any .service files`)

func TestValidateRef(t *testing.T) {
	tests := []struct {
		ref  string
		want string // "" = valid
	}{
		{"github/work", ""},
		{"a", ""},
		{"a-b_c.d/e0", ""},
		{strings.Repeat("a", 128), ""},
		{"", "invalid secret reference: empty"},
		{strings.Repeat("a", 129), "invalid secret reference: 129 characters, at most 128"},
		{"GitHub/work", `invalid secret reference "GitHub/work": character 'G' at offset 0 (allowed: a-z 0-9 _ . / -)`},
		{"github work", `invalid secret reference "github work": character ' ' at offset 6 (allowed: a-z 0-9 _ . / -)`},
		{"github:work", `invalid secret reference "github:work": character ':' at offset 6 (allowed: a-z 0-9 _ . / -)`},
		{"tök", `invalid secret reference "tök": character 'ö' at offset 1 (allowed: a-z 0-9 _ . / -)`},
	}
	for _, tt := range tests {
		err := ValidateRef(tt.ref)
		got := ""
		if err != nil {
			got = err.Error()
			if !errors.Is(err, ErrInvalidRef) {
				t.Errorf("ValidateRef(%q) = %v: does not wrap ErrInvalidRef", tt.ref, err)
			}
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ValidateRef(%q) (-want +got):\n%s", tt.ref, diff)
		}
	}
}

// stores runs the same contract over every Store.
func stores(t *testing.T) map[string]Store {
	dir := t.TempDir()
	log, _ := newLog()
	return map[string]Store{
		"memory":          &Memory{},
		"spy over memory": NewSpy(NewMemory(nil)),
		"keychain":        Open(Options{File: filepath.Join(dir, "k.json"), Keychain: &fakeKeychain{}, Logger: log}),
		"file":            Open(Options{File: filepath.Join(dir, "f.json"), Keychain: &fakeKeychain{err: errNoService}, Logger: log}),
	}
}

func TestStoreContract(t *testing.T) {
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			if _, err := s.Get(ctx, "github/work"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get before Set: %v, want ErrNotFound", err)
			}
			if err := s.Set(ctx, "github/work", ""); !errors.Is(err, ErrEmpty) || !strings.Contains(err.Error(), "empty secret: nothing to store") {
				t.Fatalf("Set empty: %v, want ErrEmpty", err)
			}
			if err := s.Set(ctx, "GitHub", "v"); !errors.Is(err, ErrInvalidRef) {
				t.Fatalf("Set with a bad reference: %v, want ErrInvalidRef", err)
			}
			for _, v := range []string{"first-value", "second-value"} {
				if err := s.Set(ctx, "github/work", v); err != nil {
					t.Fatal(err)
				}
				got, err := s.Get(ctx, "github/work")
				if err != nil || got != v {
					t.Fatalf("Get = %q, %v; want %q", got, err, v)
				}
			}
			if err := s.Set(ctx, "github/home", "other"); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(ctx, "github/work"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, "github/work"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
			}
			if err := s.Delete(ctx, "github/work"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("second Delete: %v, want ErrNotFound", err)
			}
			if got, err := s.Get(ctx, "github/home"); err != nil || got != "other" {
				t.Fatalf("other secret: %q, %v", got, err)
			}
		})
	}
}

func TestFallbackWhenNoSecretService(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "hub", "secrets.json")
	log, buf := newLog()
	k := Open(Options{File: file, Logger: log, Keychain: &fakeKeychain{err: errNoService}})
	if err := k.Set(ctx, "github/work", "tok-123456"); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Get(ctx, "github/work"); err != nil {
		t.Fatal(err)
	}
	st := k.Status()
	if st.Backend != BackendFile || st.File != file || !strings.Contains(st.Reason, "no Secret Service") {
		t.Errorf("Status = %+v", st)
	}
	if !strings.Contains(st.String(), file) {
		t.Errorf("Status.String() = %q: does not name the file", st)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("secrets file mode %v, want 0600", fi.Mode().Perm())
	}
	if di, _ := os.Stat(filepath.Dir(file)); di.Mode().Perm() != 0o700 {
		t.Errorf("secrets directory mode %v, want 0700", di.Mode().Perm())
	}
	logs := buf.String()
	if n := strings.Count(logs, fileWarning); n != 1 {
		t.Errorf("%d warnings for 2 calls served by the file, want 1 (once per process):\n%s", n, logs)
	}
	for _, want := range []string{"file=" + file, "no Secret Service", "level=WARN", "fix=", "hub auth"} {
		if !strings.Contains(logs, want) {
			t.Errorf("warning does not say %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "tok-123456") {
		t.Errorf("the secret value is in the log:\n%s", logs)
	}
}

func TestFallbackWhenKeychainHangs(t *testing.T) {
	ctx := context.Background()
	hang := make(chan struct{})
	defer close(hang)
	kc := &fakeKeychain{hang: hang}
	log, buf := newLog()
	k := Open(Options{File: filepath.Join(t.TempDir(), "secrets.json"), Logger: log, Keychain: kc, Timeout: 50 * time.Millisecond})
	start := time.Now()
	if err := k.Set(ctx, "github/work", "tok-123456"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 50*time.Millisecond || d > testenv.Timeout(2*time.Second) {
		t.Errorf("Set took %v, want the 50ms timeout and then the file", d)
	}
	if v, err := k.Get(ctx, "github/work"); err != nil || v != "tok-123456" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	// The keychain counts its calls: no timing needed to see it was not asked again.
	if n := kc.count(); n != 1 {
		t.Errorf("%d keychain calls, want 1: a hung keychain is not asked again", n)
	}
	if st := k.Status(); st.Backend != BackendFile || !strings.Contains(st.Reason, "did not answer within 50ms") {
		t.Errorf("Status = %+v", st)
	}
	if logs := buf.String(); !strings.Contains(logs, "did not answer within 50ms") {
		t.Errorf("the warning does not name the timeout:\n%s", logs)
	}
}

func TestCallerCancelDoesNotFallBack(t *testing.T) {
	hang := make(chan struct{})
	defer close(hang)
	k := Open(Options{File: filepath.Join(t.TempDir(), "s.json"), Keychain: &fakeKeychain{hang: hang}, Timeout: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := k.Get(ctx, "github/work"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get with a cancelled context: %v, want context.DeadlineExceeded", err)
	}
	k.mu.Lock()
	reason := k.reason
	k.mu.Unlock()
	if reason != "" {
		t.Errorf("fell back to the file on the caller's cancellation: %s", reason)
	}
}

func TestNoFileConfigured(t *testing.T) {
	k := Open(Options{Keychain: &fakeKeychain{err: errNoService}, Logger: slog.New(slog.DiscardHandler)})
	err := k.Set(context.Background(), "github/work", "v1234")
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no Secret Service") {
		t.Fatalf("Set without keychain or file: %v", err)
	}
}

func TestKeychainInUse(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "secrets.json")
	log, buf := newLog()

	// A value stored in the file while the keychain was away.
	away := Open(Options{File: file, Logger: log, Keychain: &fakeKeychain{err: errNoService}})
	if err := away.Set(ctx, "github/work", "from-the-file"); err != nil {
		t.Fatal(err)
	}

	kc := &fakeKeychain{}
	k := Open(Options{File: file, Logger: log, Keychain: kc})
	if st := k.Status(); st.Backend != BackendKeychain || st.Reason != "" {
		t.Fatalf("Status = %+v, want the keychain", st)
	}
	if v, err := k.Get(ctx, "github/work"); err != nil || v != "from-the-file" {
		t.Fatalf("Get of a value left in the file = %q, %v", v, err)
	}
	if !strings.Contains(buf.String(), "secret read from the fallback file") {
		t.Errorf("reading the file copy was not announced:\n%s", buf)
	}
	if err := k.Set(ctx, "github/work", "in-the-keychain"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("from-the-file")) || bytes.Contains(data, []byte("in-the-keychain")) {
		t.Errorf("the file still holds a value stored in the keychain:\n%s", data)
	}
	if v, err := k.Get(ctx, "github/work"); err != nil || v != "in-the-keychain" {
		t.Fatalf("Get = %q, %v", v, err)
	}

	// With the keychain in use and no file, nothing is created on disk.
	empty := filepath.Join(dir, "none", "secrets.json")
	k2 := Open(Options{File: empty, Logger: log, Keychain: kc})
	if err := k2.Set(ctx, "x/y", "value"); err != nil {
		t.Fatal(err)
	}
	if _, err := k2.Get(ctx, "x/z"); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	if err := k2.Delete(ctx, "x/y"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(empty)); !os.IsNotExist(err) {
		t.Errorf("the keychain store created %s: %v", filepath.Dir(empty), err)
	}
}

func TestFileModeRepaired(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "secrets.json")
	if err := os.WriteFile(file, []byte(`{"version":1,"secrets":{"a/b":"value"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	log, buf := newLog()
	k := Open(Options{File: file, Logger: log, Keychain: &fakeKeychain{err: errNoService}})
	if v, err := k.Get(ctx, "a/b"); err != nil || v != "value" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if !strings.Contains(buf.String(), "restricted it to mode 600") {
		t.Errorf("the repair was not announced:\n%s", buf)
	}
}

func TestFileConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "secrets.json")
	log := slog.New(slog.DiscardHandler)
	var wg sync.WaitGroup
	const writers, each = 4, 10
	for w := range writers {
		wg.Go(func() {
			// One Keyring per writer: separate lock handles, as separate processes have.
			k := Open(Options{File: file, Logger: log, Keychain: &fakeKeychain{err: errNoService}})
			for i := range each {
				if err := k.Set(ctx, fmt.Sprintf("w%d/s%d", w, i), "v"); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	k := Open(Options{File: file, Logger: log, Keychain: &fakeKeychain{err: errNoService}})
	for w := range writers {
		for i := range each {
			if _, err := k.Get(ctx, fmt.Sprintf("w%d/s%d", w, i)); err != nil {
				t.Errorf("lost update: %v", err)
			}
		}
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(file), ".*.tmp")); len(m) != 0 {
		t.Errorf("temporary files left: %q", m)
	}
}

func TestSpy(t *testing.T) {
	ctx := context.Background()
	spy := NewSpy(NewMemory(map[string]string{"github/work": "tok"}))
	if err := spy.Set(ctx, "slack/team", "xoxb"); err != nil {
		t.Fatal(err)
	}
	if len(spy.Gets()) != 0 {
		t.Fatalf("Set was recorded as a read: %q", spy.Gets())
	}
	_, _ = spy.Get(ctx, "github/work")
	_, _ = spy.Get(ctx, "missing/ref")
	_, _ = spy.Get(ctx, "github/work")
	if diff := cmp.Diff([]string{"github/work", "missing/ref", "github/work"}, spy.Gets()); diff != "" {
		t.Errorf("Gets (-want +got):\n%s", diff)
	}
	spy.Reset()
	if len(spy.Gets()) != 0 {
		t.Errorf("Reset kept %q", spy.Gets())
	}
}

// TestFallbackSaidOnceForWhatIsUsed: with no keychain, the hub's own reads
// of every credential (Quiet: to scrub output) say nothing, and of the
// reads a command needs only the first warns.
func TestFallbackSaidOnceForWhatIsUsed(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "secrets.json")
	log, buf := newLog()
	k := Open(Options{File: file, Logger: log, Keychain: &fakeKeychain{err: errNoService}})
	for _, ref := range []string{"a/x", "b/x", "c/x"} {
		if err := k.Set(Quiet(ctx), ref, "value-of-"+ref); err != nil {
			t.Fatal(err)
		}
		if _, err := k.Get(Quiet(ctx), ref); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(buf.String(), fileWarning); n != 0 {
		t.Fatalf("%d warnings for the hub's own reads, want none:\n%s", n, buf)
	}
	for range 3 {
		if _, err := k.Get(ctx, "b/x"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := k.Get(ctx, "c/x"); err != nil {
		t.Fatal(err)
	}
	logs := buf.String()
	if n := strings.Count(logs, fileWarning); n != 1 || !strings.Contains(logs, "ref=b/x") {
		t.Errorf("%d warnings, want 1, naming b/x, the first the command used:\n%s", n, logs)
	}
}
