package sandbox

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// spinModule is a wasm module that imports env.jsFunctionProxy (as QuickJS
// does), has one global, and exports "spin": a loop that never ends.
func spinModule() []byte {
	sec := func(id byte, body ...byte) []byte { return append([]byte{id, byte(len(body))}, body...) }
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, sec(1, 2, 0x60, 4, 0x7f, 0x7e, 0x7f, 0x7f, 1, 0x7e, 0x60, 0, 0)...)            // types
	m = append(m, sec(2, append(append([]byte{1, 3}, "env\x0fjsFunctionProxy"...), 0, 0)...)...) // import
	m = append(m, sec(3, 1, 1)...)                                                               // one function
	m = append(m, sec(6, 1, 0x7f, 1, 0x41, 0, 0x0b)...)                                          // one global
	m = append(m, sec(7, append(append([]byte{1, 4}, "spin"...), 0, 1)...)...)                   // export
	m = append(m, sec(0, append([]byte{5}, ".junk"...)...)...)                                   // a custom section
	return append(m, sec(10, 1, 7, 0, 0x03, 0x40, 0x0c, 0, 0x0b, 0x0b)...)                       // loop br 0 end
}

// The instrumented loop calls the proxy once every tickEvery headers, and a
// tick that panics stops it: the call returns the panic as its error.
func TestInstrumentStopsALoopAtATick(t *testing.T) {
	wasm, err := instrument(spinModule())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(wasm), ".junk") {
		t.Error("a custom section other than name was kept")
	}
	ctx := context.Background()
	wrt := wazero.NewRuntime(ctx)
	defer wrt.Close(ctx)
	n := 0
	stop := errors.New("stop")
	if _, err := wrt.NewHostModuleBuilder("env").NewFunctionBuilder().WithFunc(func(_ context.Context, _ api.Module, _ uint32, _ uint64, argc, _ uint32) uint64 {
		if argc != tickArgc {
			t.Errorf("a tick with argc %d, want %d", argc, uint32(tickArgc))
		}
		if n++; n == 3 {
			panic(stop)
		}
		return 0
	}).Export("jsFunctionProxy").Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	mod, err := wrt.Instantiate(ctx, wasm)
	if err != nil {
		t.Fatalf("the instrumented module does not validate: %v", err)
	}
	_, err = mod.ExportedFunction("spin").Call(ctx)
	if err == nil || !strings.Contains(err.Error(), "stop") {
		t.Fatalf("spin returned %v, want the tick's panic", err)
	}
	if n != 3 {
		t.Errorf("%d ticks, want 3", n)
	}
}

// A module instrument cannot read is refused, never half rewritten.
func TestInstrumentRefuses(t *testing.T) {
	noProxy := []byte(strings.Replace(string(spinModule()), "jsFunctionProxy", "jsFunctionProxz", 1))
	unknown := spinModule()
	unknown[len(unknown)-4] = 0xfd // a SIMD prefix where br was
	for name, wasm := range map[string][]byte{
		"not wasm":       []byte("hello"),
		"no proxy":       noProxy,
		"unknown op":     unknown,
		"truncated":      spinModule()[:len(spinModule())-3],
		"uninstrumented": spinModule()[:len(spinModule())-11],
	} {
		if out, err := instrument(wasm); err == nil {
			t.Errorf("%s: instrumented (%d bytes), want an error", name, len(out))
		}
	}
}

// A guest in a tight loop lets Go's garbage collector stop the world (at its
// ticks: machine code compiled by wazero cannot be preempted), and is stopped
// by its cancellation.
func TestTightLoopLetsTheGCRun(t *testing.T) {
	d := driver(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan Outcome, 1)
	go func() {
		done <- d.Run(ctx, Request{JS: `for (;;) {}`, Host: &fakeHost{}, Limits: Limits{ComputeMs: testWallMs, WallMs: testWallMs}})
	}()
	for d.active.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // inside the loop
	runtime.GC()
	select {
	case out := <-done:
		t.Fatalf("the loop ended before the collection: %+v", out)
	default:
	}
	cancel()
	if out := <-done; out.Status != StatusCancelled {
		t.Fatalf("cancelled loop: %+v", out)
	}
}

func FuzzInstrument(f *testing.F) {
	f.Add(spinModule())
	f.Add(spinModule()[:20])
	f.Fuzz(func(t *testing.T, wasm []byte) {
		out, err := instrument(wasm)
		if err != nil {
			return
		}
		if _, err := instrument(out); err != nil {
			t.Fatalf("the instrumented module cannot be read again: %v", err)
		}
	})
}
