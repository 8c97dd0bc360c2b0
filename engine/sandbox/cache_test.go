package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompiledCodeCache: QuickJS is compiled once per process, so each step
// runs in a child process of this test binary. The first child, given a
// CacheDir, stores the compiled code there; the second finds it and leaves it
// as it is; after the file is overwritten with garbage, the third still runs
// code and fills the cache again. Every child proves its sandbox runs code
// and stops a runaway loop (the cached code keeps the interrupt checks).
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

	child("first process (compiles)")
	file, first := cached()
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}

	child("second process (loads)")
	if st2, err := os.Stat(file); err != nil || !st2.ModTime().Equal(st.ModTime()) {
		t.Errorf("the second process rewrote the cache file (%v, %v → %v): it should have loaded it", err, st.ModTime(), st2.ModTime())
	}

	garbage := bytes.Repeat([]byte("not machine code "), 64)
	if err := os.WriteFile(file, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	child("third process (garbage in the cache)")
	if _, again := cached(); !bytes.Equal(again, first) {
		t.Errorf("after garbage, the cache holds %d bytes, want the %d compiled before", len(again), len(first))
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
