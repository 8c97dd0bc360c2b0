package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCompiledCodeCache: QuickJS is compiled once per process, so each step
// runs in a child process of this test binary. The first child, given a
// CacheDir, stores the compiled code and the instrumented module there; the
// second finds them and leaves them as they are; after the files are
// overwritten with garbage and cut short, the third still runs code and
// fills the cache again. Every child proves its sandbox runs code and stops
// a runaway loop (the cached code keeps the interrupt checks).
func TestCompiledCodeCache(t *testing.T) {
	if dir := os.Getenv("SANDBOX_CACHE_CHILD"); dir != "" {
		cacheChild(t, dir)
		return
	}
	dir := t.TempDir()
	child := func(step string) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestCompiledCodeCache$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "SANDBOX_CACHE_CHILD="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "child: sandbox works") {
			t.Fatalf("%s: child process: %v\n%s", step, err, out)
		}
	}
	cached := func() (string, []byte) {
		t.Helper()
		files, err := filepath.Glob(filepath.Join(dir, cacheLayout, "wazero-*", "*"))
		if err != nil || len(files) != 1 {
			t.Fatalf("want one compiled module in %s, found %v (%v)", dir, files, err)
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		return files[0], b
	}

	want, err := instrumentedQuickJS()
	if err != nil {
		t.Fatal(err)
	}
	module := func() (string, instrumented) {
		t.Helper()
		files, err := filepath.Glob(filepath.Join(dir, cacheLayout, "quickjs-*.wasm"))
		if err != nil || len(files) != 1 {
			t.Fatalf("want one instrumented QuickJS in %s, found %v (%v)", dir, files, err)
		}
		q, err := readInstrumented(files[0])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(q.wasm, want.wasm) || q.fixed != want.fixed {
			t.Errorf("the stored instrumented QuickJS (%d bytes, fixed %v) is not this binary's (%d bytes, fixed %v)", len(q.wasm), q.fixed, len(want.wasm), want.fixed)
		}
		return files[0], q
	}

	child("first process (compiles)")
	file, first := cached()
	mod, _ := module()
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	stMod, err := os.Stat(mod)
	if err != nil {
		t.Fatal(err)
	}

	child("second process (loads)")
	if st2, err := os.Stat(file); err != nil || !st2.ModTime().Equal(st.ModTime()) {
		t.Errorf("the second process rewrote the cache file (%v, %v → %v): it should have loaded it", err, st.ModTime(), st2.ModTime())
	}
	if st2, err := os.Stat(mod); err != nil || !st2.ModTime().Equal(stMod.ModTime()) {
		t.Errorf("the second process rewrote the instrumented QuickJS (%v, %v → %v): it should have read it", err, stMod.ModTime(), st2.ModTime())
	}

	garbage := bytes.Repeat([]byte("not machine code "), 64)
	if err := os.WriteFile(file, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(mod)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mod, whole[:len(whole)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	child("third process (garbage in the cache, the module cut short)")
	if _, again := cached(); !bytes.Equal(again, first) {
		t.Errorf("after garbage, the cache holds %d bytes, want the %d compiled before", len(again), len(first))
	}
	module()
}

// TestInstrumentedFiles: a module written is read back as it was; one
// changed in a byte, or of another format, is refused; writing a module
// removes what other versions left more than a day ago, not what they
// wrote today.
func TestInstrumentedFiles(t *testing.T) {
	dir := t.TempDir()
	q := instrumented{wasm: append([]byte("\x00asm\x01\x00\x00\x00"), bytes.Repeat([]byte{7}, 1000)...), fixed: true}
	path := instrumentedPath(dir)
	old := filepath.Join(dir, "quickjs-0123456789abcdef01234567.wasm")
	recent := filepath.Join(dir, "quickjs-76543210fedcba9876543210.wasm")
	for _, f := range []string{old, recent} {
		if err := os.WriteFile(f, []byte("another version"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	lastWeek := time.Now().Add(-7 * 24 * time.Hour)
	if err := os.Chtimes(old, lastWeek, lastWeek); err != nil {
		t.Fatal(err)
	}
	if err := writeInstrumented(path, q); err != nil {
		t.Fatal(err)
	}
	got, err := readInstrumented(path)
	if err != nil || !bytes.Equal(got.wasm, q.wasm) || !got.fixed {
		t.Fatalf("read back: %d bytes, fixed %v, %v; want %d bytes, fixed", len(got.wasm), got.fixed, err, len(q.wasm))
	}
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("another version's module of last week is still there (%v)", err)
	}
	if _, err := os.Stat(recent); err != nil {
		t.Errorf("another version's module of today was removed: %v", err)
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".quickjs-*")); len(tmp) != 0 {
		t.Errorf("files left beside it: %v", tmp)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string][]byte{
		"a byte changed": append(append([]byte{}, b[:len(b)-1]...), b[len(b)-1]^1),
		"cut short":      b[:len(b)-10],
		"another format": append([]byte("capabilities instrumented QuickJS v0\n"), b[len(instrumentedMagic):]...),
		"empty":          nil,
	} {
		if err := os.WriteFile(path, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := readInstrumented(path); err == nil {
			t.Errorf("%s: read without an error", name)
		}
	}
}

func cacheChild(t *testing.T, cacheDir string) {
	d, err := New(Options{Warm: 1, CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	if out := d.Run(ctx, Request{JS: "return 6 * 7"}); out.Status != StatusCompleted || string(out.Result) != "42" {
		t.Fatalf("trivial code: %+v", out)
	}
	out := d.Run(ctx, Request{JS: "for (;;) {}", Limits: Limits{ComputeMs: 200}})
	if out.Error == nil || out.Error.Code != CodeComputeTimeout {
		t.Fatalf("a runaway loop ended %+v, want %s", out, CodeComputeTimeout)
	}
	fmt.Println("child: sandbox works")
}
