package sandbox

// This file closes, in one place, the gaps of github.com/fastschema/qjs
// v0.0.6 measured on this machine. Each gap has a test named after it in
// harden_test.go.
//
//  1. std, os, bjson, gc, navigator, print, real setTimeout/setInterval are
//     globals, and qjs mounts its CWD read/write at "/": every runtime gets
//     an empty directory owned by the driver (guestRoot), the prelude deletes
//     the globals, and dynamic import() — the only way back to qjs:std and
//     qjs:os, whose std.evalScript is an eval — is lowered by esbuild to a
//     require() that does not exist and refused before the code runs
//     (blockImport).
//  2. eval and the Function constructors (also reached through the
//     constructor of async, generator and async generator functions, or
//     Reflect.construct) — the prelude replaces every path with a function
//     that throws EvalError.
//  3. MaxExecutionTime does nothing, and QuickJS's interrupt handler is not
//     exported from the wasm: the driver runs a rewritten QuickJS whose loop
//     headers count down to a tick into Go every 1,000 (interrupt.go), and
//     each run runs under a killSwitch context that the driver trips when
//     guest compute time or wall time runs out or the host cancels; the
//     guest traps at its next tick.
//     MemoryLimit is not cumulative (a loop of small allocations grows linear
//     memory without bound): linear memory is backed by cappedMemory, which
//     refuses to grow past the cap, so the guest's allocation fails inside
//     QuickJS ("out of memory"); checkMemory also applies a request's lower cap
//     after every entry.
//  4. MaxStackSize does nothing in the WASI build (QuickJS's stack check is
//     compiled out), and the 64 KB C stack, below which wasm-ld puts the
//     static data, overflowed into that data at about 270 JS frames and
//     corrupted the runtime: the rewritten QuickJS traps when the stack
//     pointer comes within 4 KB of the data (interrupt.go), at about 220
//     frames. A runtime that trapped is never reused (Driver.release), and
//     the trap is reported as stack_overflow (classifyTrap).
//  5. Runtime.Close leaks the wazero runtime (WASI and host modules) and
//     panics after a killed run: the driver never calls it; closeRuntime
//     closes the underlying wazero.Runtime, which frees everything.
//  6. qjs looks up the wasm export on every call, and wazero builds a new
//     function with a fresh call stack each time (~400 KB allocated per
//     bridge call, measured): cacheFunctions keeps one per export.
//  7. An Eval that returns a Promise busy-waits in js_std_await: the driver
//     only evaluates code that returns immediately (the model's function is
//     started by the prelude, results are delivered with Invoke), and drains
//     the job queue with an Eval of a constant.
//  8. qjs compiles the wasm with wazero's defaults (debug information on,
//     no disk cache unless asked) and hashes the 1 MB wasm in every qjs.New
//     (≈1 ms of CPU per runtime): compileModule compiles it itself, with a
//     compilation cache on disk and without debug information, and hands it
//     to qjs through its package variables (go:linkname), under the hash of
//     a 40-byte marker that newRuntime passes as the wasm.

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	esbuild "github.com/evanw/esbuild/pkg/api"
	"github.com/fastschema/qjs"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

var (
	errComputeTimeout = errors.New("compute time limit reached")
	errWallTimeout    = errors.New("wall time limit reached")
	errMemoryLimit    = errors.New("memory limit reached")
)

// newRuntime creates a QuickJS runtime whose filesystem is dir (kept empty),
// whose output goes nowhere, whose linear memory is capped, and whose
// execution stops when its killSwitch is tripped.
// It uses the module compileModule made.
func newRuntime(dir string, memoryBytes int) (*qjs.Runtime, *cappedMemory, *killSwitch, error) {
	mem := &cappedMemory{limit: uint64(memoryBytes + memorySlack)}
	ks := &killSwitch{Context: experimental.WithMemoryAllocator(context.Background(), mem), done: make(chan struct{})}
	var reg *qjs.ProxyRegistry
	rt, err := qjs.New(qjs.Option{
		Context:          ks,
		CWD:              dir,
		ProxyFunction:    proxyFor(func(api.Module) *qjs.ProxyRegistry { return reg }),
		MemoryLimit:      memoryBytes,
		Stdout:           io.Discard,
		Stderr:           io.Discard,
		QuickJSWasmBytes: qjsMarker,
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("creating runtime: %w", err)
	}
	reg = *field[*qjs.ProxyRegistry](rt, "registry")
	cacheFunctions(rt)
	return rt, mem, ks, nil
}

// DefaultCacheDir is where the sandbox keeps QuickJS's compiled code:
// $CAPABILITIES_CACHE_DIR, else the user's cache directory's capabilities
// folder; "" (no disk cache) when neither is known.
func DefaultCacheDir() string {
	if d := os.Getenv("CAPABILITIES_CACHE_DIR"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "capabilities")
}

// cacheLayout names the subdirectory of Options.CacheDir holding wazero's
// compilation cache (wazero adds a directory per wazero version, architecture
// and OS; a file's name is a hash of the wasm and the CPU's features), and
// the instrumented module itself (instrumented.go). Only this package writes
// there: the instrumented QuickJS (interrupt.go) without
// CloseOnContextDone, the original only with it (wazero's key leaves that
// setting out, and code compiled without either cannot be stopped).
const cacheLayout = "sandbox-wasm-v1"

// qjs v0.0.6 keeps its compiled module in package variables and, in every
// qjs.New, hashes the wasm bytes it is given (1 MB: ≈1 ms of CPU per
// runtime) to decide whether to compile again. compileModule compiles the
// module itself, with the settings the sandbox needs, and stores it there
// under the hash of qjsMarker, which newRuntime passes as the wasm bytes:
// qjs.New then hashes 40 bytes and reuses the module.
//
//go:linkname qjsWasm github.com/fastschema/qjs.wasmBytes
var qjsWasm []byte

//go:linkname qjsCompiled github.com/fastschema/qjs.compiledQJSModule
var qjsCompiled wazero.CompiledModule

//go:linkname qjsConfig github.com/fastschema/qjs.cachedRuntimeConfig
var qjsConfig wazero.RuntimeConfig

//go:linkname qjsHash github.com/fastschema/qjs.cachedBytesHash
var qjsHash uint64

// qjsPrelude is the prelude's bytecode (under qjsMutex), compiled once per
// process by checkInterrupt; nil until the interrupt is proven.
var qjsPrelude []byte

// qjsFixed is set (under qjsMutex) when the compiled QuickJS keeps all of a
// runtime's state in its linear memory (instrumented.fixed): its runtimes
// may then be reset to their snapshot and serve another run.
var qjsFixed bool

//go:linkname qjsMutex github.com/fastschema/qjs.compilationMutex
var qjsMutex sync.Mutex

// compiling makes concurrent Drivers compile once.
var compiling sync.Mutex

var qjsMarker = []byte("capabilities: QuickJS compiled by sandbox")

func markerHash() uint64 {
	h := fnv.New64a()
	h.Write(qjsMarker)
	return h.Sum64()
}

// compileModule compiles QuickJS once per process (later calls return at
// once), loading the machine code from cacheDir's compilation cache when it
// is there and storing it there when not, then checks that guest code can be
// interrupted. A cache that cannot be read is emptied and filled again; one
// that cannot be used at all, or whose code cannot be interrupted, is left
// out: QuickJS is compiled in memory.
func compileModule(dir string, memoryBytes int, cacheDir string) error {
	compiling.Lock()
	defer compiling.Unlock()
	qjsMutex.Lock()
	done := qjsCompiled != nil && qjsHash == markerHash() && qjsPrelude != nil
	qjsMutex.Unlock()
	if done {
		return nil
	}
	if cacheDir != "" {
		wdir := filepath.Join(cacheDir, cacheLayout)
		err := compileWith(wdir)
		if err != nil {
			slog.Warn("the sandbox's compiled-code cache could not be read; filling it again", "dir", wdir, "err", err)
			if rmErr := os.RemoveAll(wdir); rmErr == nil {
				err = compileWith(wdir)
			}
		}
		if err == nil {
			err = checkInterrupt(dir, memoryBytes)
		}
		if err == nil {
			return nil
		}
		slog.Warn("the sandbox's compiled-code cache cannot be used; compiling QuickJS in memory", "dir", wdir, "err", err)
	}
	if err := compileWith(""); err != nil {
		return err
	}
	return checkInterrupt(dir, memoryBytes)
}

// compileWith compiles QuickJS with a compilation cache in cacheDir ("":
// in memory), the instrumented module kept there too, and hands it to qjs.
// Debug information is off: wazero would parse QuickJS's DWARF sections and
// keep, and store, a source map of its machine code (150,000 reads of 8
// bytes each when loaded from the cache).
func compileWith(cacheDir string) error {
	ctx := context.Background()
	var q instrumented
	var err error
	if cacheDir != "" {
		q, err = cachedInstrumented(cacheDir)
	} else {
		q, err = instrumentedQuickJS()
	}
	wasm := q.wasm
	if err != nil {
		// Slower but as safe: wazero checks for termination at every loop
		// header by calling out to Go, and each call into the module starts a
		// goroutine that closes it when the kill switch trips.
		slog.Warn("the sandbox's QuickJS runs without its fast interrupt", "err", err)
	}
	cache := wazero.NewCompilationCache()
	if cacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(cacheDir)
		if err != nil {
			return fmt.Errorf("opening the compiled-code cache: %w", err)
		}
		cache = c
	}
	cfg := wazero.NewRuntimeConfig().WithCompilationCache(cache).WithCloseOnContextDone(wasm == nil).WithDebugInfoEnabled(false)
	if wasm == nil {
		wasm = qjsWasm
	}
	cm, err := wazero.NewRuntimeWithConfig(ctx, cfg).CompileModule(ctx, wasm)
	if err != nil {
		return fmt.Errorf("compiling QuickJS: %w", err)
	}
	qjsMutex.Lock()
	defer qjsMutex.Unlock()
	qjsCompiled, qjsConfig, qjsHash = cm, cfg, markerHash()
	qjsFixed = q.fixed
	return nil
}

// checkInterrupt proves that a runaway guest can be stopped. qjs compiles the
// wasm module once per process with the CloseOnContextDone setting of the
// first qjs.New; had anything else in this process created a qjs runtime
// first without it, no limit could stop an infinite loop. Its runtime first
// compiles the prelude (qjsPrelude, set once the proof is made): a start
// creates one runtime fewer.
func checkInterrupt(dir string, memoryBytes int) error {
	rt, _, ks, err := newRuntime(dir, memoryBytes)
	if err != nil {
		return err
	}
	prelude, err := compilePrelude(rt)
	if err != nil {
		closeRuntime(rt)
		return err
	}
	returned := make(chan struct{})
	before := ticks.Load()
	go func() {
		defer close(returned)
		defer func() { _ = recover() }()
		_, _ = rt.Eval("probe.js", qjs.Code("for (;;) {}"))
	}()
	// The switch trips once the guest ticks (it is running: a microsecond
	// in), or after 5 ms without a tick (QuickJS compiled with wazero's own
	// check, which does not tick).
	for wait := time.Now().Add(5 * time.Millisecond); ticks.Load() == before && time.Now().Before(wait); {
		time.Sleep(50 * time.Microsecond)
	}
	ks.trip(errComputeTimeout)
	select {
	case <-returned:
		closeRuntime(rt)
		qjsMutex.Lock()
		qjsPrelude = prelude
		qjsMutex.Unlock()
		return nil
	case <-time.After(5 * time.Second):
		return errors.New("checking the sandbox interrupt: guest code cannot be stopped")
	}
}

// killSwitch is the context every call of one run into its runtime runs
// under. Tripping it makes the guest stop at its next tick (interrupt.go).
// It is never reset: a runtime reset for another run gets a new one.
type killSwitch struct {
	context.Context
	done    chan struct{}
	once    sync.Once
	mu      sync.Mutex
	cause   error
	tripped atomic.Bool
	// att, when set, is the run's attempt, whose yield is called at each
	// tick on the guest's goroutine.
	att *attempt
}

// killSwitchKey finds the kill switch of a call from its context.
type killSwitchKey struct{}

func (k *killSwitch) Value(key any) any {
	if key == (killSwitchKey{}) {
		return k
	}
	return k.Context.Value(key)
}

func (k *killSwitch) Done() <-chan struct{} { return k.done }

func (k *killSwitch) Err() error {
	if k.Cause() != nil {
		return context.Canceled
	}
	return nil
}

// trip stops the runtime; the first cause wins.
func (k *killSwitch) trip(cause error) {
	k.once.Do(func() {
		k.mu.Lock()
		k.cause = cause
		k.mu.Unlock()
		k.tripped.Store(true)
		close(k.done)
	})
}

// Cause is why the switch was tripped, or nil.
func (k *killSwitch) Cause() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cause
}

// cappedMemory backs a runtime's linear memory and refuses to grow it past
// limit: memory.grow then fails and QuickJS reports out of memory.
type cappedMemory struct {
	buf     []byte
	limit   uint64
	reserve uint64      // the capacity to allocate at least (a snapshot's size)
	pool    *memoryPool // where the buffer comes from and goes back to, if anywhere
	hit     atomic.Bool
}

func (m *cappedMemory) Allocate(capacity, _ uint64) experimental.LinearMemory {
	want := min(max(capacity, m.reserve), m.limit)
	if b := m.pool.take(want); b != nil {
		m.buf = b
		return m
	}
	m.buf = make([]byte, 0, want)
	return m
}

func (m *cappedMemory) Reallocate(size uint64) []byte {
	if size > m.limit {
		m.hit.Store(true)
		return nil
	}
	if size > uint64(cap(m.buf)) {
		grown := make([]byte, size, min(max(size, 2*uint64(cap(m.buf))), m.limit))
		copy(grown, m.buf)
		m.buf = grown
	}
	old := len(m.buf)
	m.buf = m.buf[:size]
	clear(m.buf[old:]) // wasm's new pages are zero; a recycled buffer's are not
	return m.buf
}

func (m *cappedMemory) Free() { m.buf = nil }

// memoryPool keeps the linear memory of a driver's closed runtimes for its
// new copies to start in: a runtime's memory is 0.5 MB and more, and
// allocating it anew for every copy doubled the garbage the sandbox made
// before runtimes were reset (the collector's work, and memory no cache has
// seen yet). A buffer is
// given back only by vm.close, after its module is closed, and nothing of
// what it held is seen again: wazero asks for every page the module uses
// through Reallocate, which clears what it adds, and a copied runtime's
// memory is then overwritten whole by its snapshot. A nil pool keeps
// nothing.
type memoryPool struct {
	mu   sync.Mutex
	bufs [][]byte
}

const (
	spareBuffers   = 4
	spareMaxBuffer = 2 << 20 // a run that grew its memory past this gives it back to Go
)

// take returns an empty buffer of capacity at least want, or nil.
func (p *memoryPool) take(want uint64) []byte {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, b := range p.bufs {
		if uint64(cap(b)) >= want {
			p.bufs = append(p.bufs[:i], p.bufs[i+1:]...)
			return b[:0]
		}
	}
	return nil
}

func (p *memoryPool) give(b []byte) {
	if p == nil || cap(b) == 0 || cap(b) > spareMaxBuffer {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.bufs) < spareBuffers {
		p.bufs = append(p.bufs, b)
	}
}

// empty lets every spare memory go.
func (p *memoryPool) empty() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bufs = nil
}

// field returns a pointer to an unexported field of a qjs.Runtime.
func field[T any](rt *qjs.Runtime, name string) *T { return fieldOf[T](rt, name) }

// fieldOf returns a pointer to the field name of the struct p points to; it
// panics when there is none (a qjs version whose layout differs).
func fieldOf[T any](p any, name string) *T {
	f := reflect.ValueOf(p).Elem().FieldByName(name)
	if !f.IsValid() || f.Type() != reflect.TypeFor[T]() {
		panic(fmt.Sprintf("sandbox: %T has no field %s of type %v", p, name, reflect.TypeFor[T]()))
	}
	return (*T)(unsafe.Pointer(f.UnsafeAddr()))
}

// cacheFunctions makes the runtime reuse one wazero function per export.
func cacheFunctions(rt *qjs.Runtime) {
	m := field[api.Module](rt, "module")
	*m = &cachedModule{Module: *m, fns: map[string]*cachedFunction{}}
}

type cachedModule struct {
	api.Module
	fns map[string]*cachedFunction
}

func (m *cachedModule) ExportedFunction(name string) api.Function {
	if f := m.fns[name]; f != nil {
		return f
	}
	inner := m.Module.ExportedFunction(name)
	if inner == nil {
		return nil
	}
	f := &cachedFunction{Function: inner, module: m.Module, name: name}
	m.fns[name] = f
	usedExports.Store(name, true)
	return f
}

// usedExports are the exports any runtime of this process has called: a
// runtime copied from a snapshot makes their functions when it is made
// (off the request path, by a warmer), not on its run's first calls.
var usedExports sync.Map

// warmFunctions makes the functions of every export used so far.
func (m *cachedModule) warmFunctions() {
	usedExports.Range(func(name, _ any) bool {
		m.ExportedFunction(name.(string))
		return true
	})
}

// cachedFunction is not reentrant: a nested call of the same export (from a
// host function) gets a fresh wazero function, as qjs would have made.
type cachedFunction struct {
	api.Function
	module api.Module
	name   string
	busy   bool
}

func (f *cachedFunction) Call(ctx context.Context, params ...uint64) ([]uint64, error) {
	if f.busy {
		return f.module.ExportedFunction(f.name).Call(ctx, params...)
	}
	f.busy = true
	defer func() { f.busy = false }()
	return f.Function.Call(ctx, params...)
}

// close frees a runtime the sandbox is done with, killed or not, and keeps
// its memory for a new runtime. Nothing may use the runtime afterwards.
func (v *vm) close() {
	buf := v.mem.buf
	closeRuntime(v.rt)
	if v.mem.buf == nil { // freed by the module's close: no longer wazero's
		v.mem.pool.give(buf)
	}
}

// closeRuntime frees a runtime, killed or not. qjs's own Close leaks the
// wazero runtime and panics when the module was closed by a kill.
// A runtime copied from a snapshot has no wazero runtime of its own: its
// module is closed, and its Go functions forgotten.
func closeRuntime(rt *qjs.Runtime) {
	if wrt := *field[wazero.Runtime](rt, "wrt"); wrt != nil {
		_ = wrt.Close(context.Background())
		return
	}
	if m := *field[api.Module](rt, "module"); m != nil {
		host.regs.Delete(m.Name())
		_ = m.Close(context.Background())
	}
}

// memorySize is the size of the runtime's linear memory in bytes.
func memorySize(rt *qjs.Runtime) int {
	return int(rt.Mem().Size())
}

// memorySlack is linear memory beyond the QuickJS heap limit that the hard cap
// tolerates: the C stack, static data and allocator overhead (measured ~4 MB).
const memorySlack = 16 << 20

// checkMemory reports errMemoryLimit when linear memory grew past the cap.
func checkMemory(rt *qjs.Runtime, memoryBytes int) error {
	if memorySize(rt) > memoryBytes+memorySlack {
		return errMemoryLimit
	}
	return nil
}

// blockImport refuses code that uses dynamic import(). A fast path skips
// esbuild when the text cannot contain the keyword (also not through a
// unicode escape).
func blockImport(wrapped string) error {
	if !strings.Contains(wrapped, "import") && !strings.Contains(wrapped, `\u`) {
		return nil
	}
	r := esbuild.Transform(wrapped, esbuild.TransformOptions{
		Loader:    esbuild.LoaderJS,
		Supported: map[string]bool{"dynamic-import": false},
	})
	if len(r.Errors) > 0 {
		return fmt.Errorf("checking for import(): %s", r.Errors[0].Text)
	}
	// import.meta needs no check: QuickJS rejects it outside modules.
	if strings.Contains(string(r.Code), "__toESM(require(") {
		return errImport
	}
	return nil
}

var errImport = errors.New("import() and import.meta are not available in the sandbox")

// classifyTrap turns a panic out of qjs (a wasm trap or a call on a closed
// module) into an error code, using the kill cause when there is one.
func classifyTrap(cause error, r any, mem *cappedMemory) *Error {
	switch {
	case errors.Is(cause, errComputeTimeout):
		return computeTimeoutError()
	case errors.Is(cause, errWallTimeout):
		return WallTimeoutError()
	case cause != nil:
		return cancelledError()
	}
	msg := fmt.Sprint(r)
	if mem != nil && mem.hit.Load() {
		return memoryError()
	}
	// A wasm trap in QuickJS itself: with memory ruled out above, deep
	// recursion reaching the stack guard is the one cause measured
	// ("unreachable"; "out of bounds memory access" and "invalid table
	// access" before the guard).
	if strings.Contains(firstLine(msg), "wasm error") {
		return &Error{
			Code:    CodeStackOverflow,
			Message: "the code crashed the JavaScript engine, almost always by recursing too deeply (the sandbox allows about 200 nested calls)",
			Hint:    "rewrite deep recursion as a loop with an explicit stack",
		}
	}
	return &Error{Code: CodeInternal, Message: "the sandbox failed: " + firstLine(msg), Hint: "run the code again; if it repeats, simplify it"}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Warm fills the compiled-code cache under cacheDir (DefaultCacheDir) with
// QuickJS's machine code, so that a later process's first execute loads it
// (≈30 ms) instead of compiling it (most of a second on a small machine):
// `hub init` calls it. It reports whether it compiled now; false when the
// cache already held the code.
func Warm(cacheDir string) (compiled bool, err error) {
	if cacheDir == "" {
		return false, errors.New("warming the sandbox: no cache directory (set CAPABILITIES_CACHE_DIR)")
	}
	wdir := filepath.Join(cacheDir, cacheLayout)
	_, statErr := os.Stat(instrumentedPath(wdir))
	had := statErr == nil && cacheFilled(wdir)
	compiling.Lock()
	defer compiling.Unlock()
	if err := compileWith(wdir); err != nil {
		return false, fmt.Errorf("warming the sandbox: %w", err)
	}
	return !had, nil
}

// cacheFilled reports whether wazero's compilation cache under dir holds a
// compiled module (a file in its per-version folder).
func cacheFilled(dir string) bool {
	found := false
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && path != instrumentedPath(dir) && !strings.HasSuffix(path, ".tmp") {
			found = true
			return fs.SkipAll
		}
		return nil
	})
	return found
}
