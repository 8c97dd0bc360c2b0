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

// spinModule is a wasm module laid out like QuickJS (wasm-ld): it imports
// env.jsFunctionProxy, its first global is the stack pointer (20,000) above
// 4 bytes of static data at 1,024, and it exports "spin", a loop that never
// ends, and "dive" (the stack pointer lowered by 16,000, into the data) and
// "step" (lowered by 1,000), each then set back.
func spinModule() []byte { return spinModuleWith(nil, nil) }

// spinModuleWith is spinModule with more globals (encoded entries) and
// instructions run before spin's loop.
func spinModuleWith(globals [][]byte, prefix []byte) []byte {
	sec := func(id byte, body ...byte) []byte {
		return append(append([]byte{id}, uleb(uint32(len(body)))...), body...)
	}
	lower := func(by int32) []byte {
		b := append([]byte{0, 0x23, 0, 0x41}, sleb(by)...) // no locals; global.get 0; i32.const by
		b = append(b, 0x6b, 0x24, 0)                       // i32.sub; global.set 0
		b = append(b, 0x23, 0, 0x41)                       // global.get 0; i32.const by
		b = append(append(b, sleb(by)...), 0x6a, 0x24, 0)  // i32.add; global.set 0
		return append(append(uleb(uint32(len(b)+1)), b...), 0x0b)
	}
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, sec(1, 2, 0x60, 4, 0x7f, 0x7e, 0x7f, 0x7f, 1, 0x7e, 0x60, 0, 0)...)            // types
	m = append(m, sec(2, append(append([]byte{1, 3}, "env\x0fjsFunctionProxy"...), 0, 0)...)...) // import
	m = append(m, sec(3, 3, 1, 1, 1)...)                                                         // three functions
	m = append(m, sec(5, 1, 0, 1)...)                                                            // one page of memory
	gs := append(append([]byte{byte(1 + len(globals)), 0x7f, 1, 0x41}, sleb(20000)...), 0x0b)    // the stack pointer
	for _, g := range globals {
		gs = append(gs, g...)
	}
	m = append(m, sec(6, gs...)...)
	m = append(m, sec(7, append(append(append(append(append([]byte{3, 4}, "spin"...), 0, 1, 4), "dive"...), 0, 2, 4), append([]byte("step"), 0, 3)...)...)...) // exports
	m = append(m, sec(0, append([]byte{5}, ".junk"...)...)...)                                                                                                 // a custom section
	spin := append(append([]byte{0}, prefix...), 0x03, 0x40, 0x0c, 0, 0x0b, 0x0b)                                                                              // loop br 0 end
	code := append(append([]byte{3}, uleb(uint32(len(spin)))...), spin...)
	code = append(code, lower(16000)...)
	code = append(code, lower(1000)...)
	m = append(m, sec(10, code...)...)
	return append(m, sec(11, 1, 0, 0x41, 0x80, 0x08, 0x0b, 4, 1, 2, 3, 4)...) // 4 bytes at 1,024
}

// A module is fixed (its runtimes may be reset: Driver.reset) when its one
// global is the stack pointer and no instruction changes a table.
func TestInstrumentFixed(t *testing.T) {
	for _, c := range []struct {
		name  string
		wasm  []byte
		fixed bool
	}{
		{"the stack pointer alone", spinModule(), true},
		{"a second global", spinModuleWith([][]byte{{0x7f, 1, 0x41, 0, 0x0b}}, nil), false},
		{"table.set", spinModuleWith(nil, []byte{0x41, 0, 0xd0, 0x70, 0x26, 0}), false},
		{"table.grow", spinModuleWith(nil, []byte{0xd0, 0x70, 0x41, 1, 0xfc, 15, 0, 0x1a}), false},
		{"table.size (reads)", spinModuleWith(nil, []byte{0xfc, 16, 0, 0x1a}), true},
	} {
		q, err := instrumentModule(c.wasm)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if q.fixed != c.fixed {
			t.Errorf("%s: fixed %v, want %v", c.name, q.fixed, c.fixed)
		}
	}
	if q, err := instrumentedQuickJS(); err != nil || !q.fixed {
		t.Errorf("QuickJS: fixed %v (%v), want true", q.fixed, err)
	}
}

// The stack guard: lowering the stack pointer into the static data traps;
// lowering it by less does not.
func TestInstrumentGuardsTheStack(t *testing.T) {
	wasm, err := instrument(spinModule())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	wrt := wazero.NewRuntime(ctx)
	defer wrt.Close(ctx)
	if _, err := wrt.NewHostModuleBuilder("env").NewFunctionBuilder().WithFunc(func(context.Context, api.Module, uint32, uint64, uint32, uint32) uint64 { return 0 }).Export("jsFunctionProxy").Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	mod, err := wrt.Instantiate(ctx, wasm)
	if err != nil {
		t.Fatalf("the instrumented module does not validate: %v", err)
	}
	if _, err := mod.ExportedFunction("step").Call(ctx); err != nil {
		t.Errorf("a frame of 1,000 bytes: %v", err)
	}
	if _, err := mod.ExportedFunction("dive").Call(ctx); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("the stack pointer lowered into the static data: %v, want the guard's trap", err)
	}
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
	unknown := []byte(strings.Replace(string(spinModule()), "\x03\x40\x0c\x00", "\x03\x40\xfd\x00", 1)) // a SIMD prefix where br was
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

// instrument is instrumentModule's rewritten wasm alone.
func instrument(wasm []byte) ([]byte, error) {
	q, err := instrumentModule(wasm)
	return q.wasm, err
}
