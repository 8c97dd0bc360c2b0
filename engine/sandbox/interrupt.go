package sandbox

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/fastschema/qjs"
	"github.com/tetratelabs/wazero/api"
)

// The interrupt. qjs v0.0.6 offers none that the host can reach (QuickJS's
// interrupt handler is not exported from its wasm), and wazero's
// CloseOnContextDone makes every loop header of the compiled module call
// out to Go to check whether the module was closed: measured on this
// machine, that makes all guest code 5 to 7 times slower (a JavaScript loop
// iteration 700 ns instead of 100 ns; the prelude's setup 58 µs instead of
// 12 µs).
//
// So the sandbox compiles a rewritten QuickJS that calls out to Go at one
// loop header in tickEvery: the module gets one more global, a countdown,
// and every loop header of every function begins with
//
//	if (countdown == 0) {
//	  countdown = tickEvery
//	  env.jsFunctionProxy(0, 0, tickArgc, 0)   // the tick
//	} else {
//	  countdown--
//	}
//
// The tick goes to the sandbox's own jsFunctionProxy (proxyFor), which
// panics when the call's kill switch was tripped: the call into the module
// returns that panic as its error, and the driver reports why the switch
// was tripped (classifyTrap); the runtime is never used again. Every path
// that runs long in QuickJS goes around a loop (its interpreter, parser,
// garbage collector, malloc), and deep recursion runs off the wasm stack.
// The tick is also where a long guest computation lets Go's garbage
// collector stop the world: machine code compiled by wazero cannot be
// preempted.
//
// The same rewrite guards QuickJS's C stack. wasm-ld lays out static data
// first and the 64 KB stack above it, growing down, with no guard: deep
// recursion ran the stack pointer into QuickJS's static data and went on
// with it corrupted (which runs then trapped and which returned nonsense
// depended on the layout). Now every write of the stack pointer global is
// followed by
//
//	if (sp < end of static data + stackMargin) unreachable
//
// so the run traps before its frame touches the data (stackMargin covers
// the frames leaf functions take without moving the stack pointer), and
// the driver reports stack_overflow.
//
// instrument decodes every instruction of the code section to find the loop
// opcodes (an immediate may hold the loop opcode's byte); an opcode it does
// not know makes it refuse the module, and compileWith then falls back to
// CloseOnContextDone, slower but as safe.

// tickEvery is how many loop headers pass between two ticks: ≈20–100 µs of
// guest code, and a tick costs ≈0.5 µs.
const tickEvery = 1000

// tickArgc is the argc of a tick: no call from QuickJS has that many
// arguments.
const tickArgc = 0xffffffff

// stackMargin is how far above the static data the stack pointer may go.
const stackMargin = 4 << 10

const (
	secCustom   = 0
	secType     = 1
	secImport   = 2
	secFunction = 3
	secGlobal   = 6
	secCode     = 10
	secData     = 11
)

// instrumented is QuickJS as the sandbox runs it.
type instrumented struct {
	wasm []byte
	// fixed: the module's only state outside its linear memory is the
	// stack pointer (its one defined global, back at its initial value
	// whenever no call is in progress), the countdown (which the guest
	// cannot observe) and tables no instruction changes. A runtime of it is
	// then all in its memory, and can be reset (Driver.reset).
	fixed bool
}

// instrumentModule returns wasm with the countdown added and checked at
// every loop header, and whether the result is fixed. Custom sections other
// than "name" are dropped (DWARF would describe the old code offsets).
func instrumentModule(wasm []byte) (instrumented, error) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], []byte("\x00asm")) {
		return instrumented{}, errors.New("instrumenting QuickJS: not a wasm module")
	}
	type section struct {
		id   byte
		body []byte
	}
	var secs []section
	r := &reader{b: wasm, off: 8}
	for r.off < len(r.b) {
		id := r.byte()
		size := r.u32()
		body := r.take(int(size))
		if r.err != nil {
			return instrumented{}, fmt.Errorf("instrumenting QuickJS: reading section %d: %w", id, r.err)
		}
		secs = append(secs, section{id, body})
	}
	var (
		im          imports
		defined     int
		haveGlobals bool
		m           module
	)
	for _, s := range secs {
		var err error
		switch s.id {
		case secImport:
			im, err = readImports(s.body)
		case secType:
			m.params, err = readTypes(s.body)
		case secFunction:
			m.funcs, err = readFunctions(s.body)
		case secGlobal:
			haveGlobals = true
			r := &reader{b: s.body}
			defined = int(r.u32())
			if defined > 0 && r.byte() == 0x7f && r.byte() == 0x01 && r.byte() == 0x41 { // (mut i32) (i32.const …)
				m.spInit = r.s64()
			}
			err = r.err
		case secData:
			m.dataEnd, err = dataEnd(s.body)
		}
		if err != nil {
			return instrumented{}, fmt.Errorf("instrumenting QuickJS: %w", err)
		}
	}
	if !haveGlobals || im.proxy < 0 {
		return instrumented{}, errors.New("instrumenting QuickJS: the module has no global section or does not import env.jsFunctionProxy")
	}
	// The stack pointer is wasm-ld's global 0 (nothing imported before it):
	// mutable, and starting above the static data.
	if im.globals != 0 || m.dataEnd == 0 || m.spInit <= m.dataEnd+2*stackMargin || m.spInit >= 1<<30 {
		return instrumented{}, errors.New("instrumenting QuickJS: no stack pointer above the static data (wasm-ld's layout)")
	}
	m.guard = int32(m.dataEnd + stackMargin)
	n := uleb(uint32(im.globals + defined))
	check := []byte{0x23}
	check = append(check, n...)                               // global.get $countdown
	check = append(check, 0x45, 0x04, 0x40, 0x41)             // i32.eqz; if; i32.const
	check = append(check, sleb(tickEvery)...)                 //   tickEvery
	check = append(append(check, 0x24), n...)                 //   global.set $countdown
	check = append(check, 0x41, 0x00, 0x42, 0x00, 0x41, 0x7f) //   i32.const 0; i64.const 0; i32.const -1 (tickArgc)
	check = append(check, 0x41, 0x00, 0x10)                   //   i32.const 0; call
	check = append(check, uleb(uint32(im.proxy))...)          //   env.jsFunctionProxy
	check = append(check, 0x1a, 0x05, 0x23)                   //   drop; else; global.get
	check = append(check, n...)                               //   $countdown
	check = append(check, 0x41, 0x01, 0x6b, 0x24)             //   i32.const 1; i32.sub; global.set
	check = append(check, n...)                               //   $countdown
	check = append(check, 0x0b)                               // end

	out := append(make([]byte, 0, len(wasm)+len(wasm)/8), wasm[:8]...)
	loops := 0
	for _, s := range secs {
		body := s.body
		switch s.id {
		case secCustom:
			if r := (&reader{b: body}); string(r.name()) != "name" {
				continue
			}
		case secGlobal:
			// One more entry: (global $countdown (mut i32) (i32.const tickEvery)).
			body = appendVec(body, append(append([]byte{0x7f, 0x01, 0x41}, sleb(tickEvery)...), 0x0b))
		case secCode:
			var k int
			var err error
			if body, k, err = instrumentCode(body, check, &m); err != nil {
				return instrumented{}, fmt.Errorf("instrumenting QuickJS: %w", err)
			}
			loops += k
		}
		out = append(out, s.id)
		out = append(out, uleb(uint32(len(body)))...)
		out = append(out, body...)
	}
	if loops == 0 {
		return instrumented{}, errors.New("instrumenting QuickJS: no loop found")
	}
	return instrumented{wasm: out, fixed: defined == 1 && m.tableWrites == 0}, nil
}

// appendVec adds one already-encoded entry to a section that is a vector.
func appendVec(body, entry []byte) []byte {
	r := &reader{b: body}
	n := r.u32()
	out := uleb(n + 1)
	out = append(out, body[r.off:]...)
	return append(out, entry...)
}

// imports is what instrument needs of the import section: how many globals
// it imports, and the function index of env.jsFunctionProxy (-1: none).
type imports struct {
	globals, proxy int
}

func readImports(body []byte) (imports, error) {
	im := imports{proxy: -1}
	r := &reader{b: body}
	n, funcs := r.u32(), 0
	for i := uint32(0); i < n && r.err == nil; i++ {
		module, name := string(r.name()), string(r.name())
		switch kind := r.byte(); kind {
		case 0x00: // function
			r.u32()
			if module == "env" && name == "jsFunctionProxy" {
				im.proxy = funcs
			}
			funcs++
		case 0x01: // table
			r.byte()
			r.limits()
		case 0x02: // memory
			r.limits()
		case 0x03: // global
			r.byte()
			r.byte()
			im.globals++
		default:
			return im, fmt.Errorf("import %d has kind %#x", i, kind)
		}
	}
	if r.err != nil {
		return im, fmt.Errorf("reading the imports: %w", r.err)
	}
	return im, nil
}

// module is what instrumentCode needs of the rest of the module.
type module struct {
	params  []int // parameters of each type
	funcs   []int // type of each defined function (the code bodies, in order)
	spInit  int64 // the first defined global's initial value
	dataEnd int64 // the end of the static data
	guard   int32 // the lowest stack pointer allowed
	// tableWrites counts the instructions that change a table (table.set,
	// table.init, elem.drop, table.copy, table.grow, table.fill).
	tableWrites int
}

// instrumentCode rewrites every function body (see instrumentBody).
func instrumentCode(body, check []byte, m *module) ([]byte, int, error) {
	r := &reader{b: body}
	n := r.u32()
	if int(n) != len(m.funcs) {
		return nil, 0, fmt.Errorf("%d function bodies for %d functions", n, len(m.funcs))
	}
	out := append(make([]byte, 0, len(body)+len(body)/8), uleb(n)...)
	loops := 0
	for i := uint32(0); i < n; i++ {
		size := r.u32()
		fn := r.take(int(size))
		if r.err != nil {
			return nil, 0, fmt.Errorf("reading function body %d: %w", i, r.err)
		}
		t := m.funcs[i]
		if t >= len(m.params) {
			return nil, 0, fmt.Errorf("function body %d has type %d of %d", i, t, len(m.params))
		}
		nb, k, err := instrumentBody(fn, check, m, m.params[t])
		if err != nil {
			return nil, 0, fmt.Errorf("function body %d: %w", i, err)
		}
		loops += k
		out = append(out, uleb(uint32(len(nb)))...)
		out = append(out, nb...)
	}
	if r.off != len(r.b) {
		return nil, 0, errors.New("the code section has bytes after its last body")
	}
	return out, loops, nil
}

// instrumentBody inserts check after every loop's block type, and the
// stack guard after every write of the stack pointer, through one more local
// (an i32 after the others).
func instrumentBody(fn, check []byte, m *module, params int) ([]byte, int, error) {
	r := &reader{b: fn}
	entries := r.u32()
	first := r.off // the first locals entry
	locals := uint64(params)
	for i := uint32(0); i < entries && r.err == nil; i++ {
		locals += uint64(r.u32())
		r.byte()
	}
	if r.err != nil {
		return nil, 0, r.err
	}
	if locals >= 50000 {
		return nil, 0, fmt.Errorf("%d locals", locals)
	}
	tmp := uleb(uint32(locals))
	guard := append([]byte{0x22}, tmp...)                 // local.tee $tmp
	guard = append(guard, 0x24, 0x00, 0x20)               // global.set $sp (global 0); local.get
	guard = append(guard, tmp...)                         //   $tmp
	guard = append(append(guard, 0x41), sleb(m.guard)...) // i32.const guard
	guard = append(guard, 0x49, 0x04, 0x40, 0x00, 0x0b)   // i32.lt_u; if; unreachable; end
	out := make([]byte, 0, len(fn)+len(fn)/8)
	out = append(out, uleb(entries+1)...)
	out = append(out, fn[first:r.off]...)
	out = append(out, 0x01, 0x7f) // (local $tmp i32)
	copied, loops := r.off, 0
	for r.err == nil && r.off < len(r.b) {
		start := r.off
		op := r.byte()
		if err := r.skipImmediates(op); err != nil {
			return nil, 0, err
		}
		switch {
		case op == 0x03: // loop
			out = append(append(out, fn[copied:r.off]...), check...)
			copied = r.off
			loops++
		case op == 0x24 && globalIndex(fn[start+1:r.off]) == 0: // global.set $sp
			out = append(append(out, fn[copied:start]...), guard...)
			copied = r.off
		case op == 0x26:
			m.tableWrites++
		case op == 0xfc:
			if sub := globalIndex(fn[start+1 : r.off]); sub >= 12 && sub <= 17 && sub != 16 {
				m.tableWrites++
			}
		}
	}
	return append(out, fn[copied:]...), loops, r.err
}

// globalIndex decodes the immediate of global.set (maybe padded, as wasm-ld
// leaves relocated indices).
func globalIndex(imm []byte) int {
	v, n := binary.Uvarint(imm)
	if n <= 0 {
		return -1
	}
	return int(v)
}

// readTypes returns the number of parameters of each function type.
func readTypes(body []byte) ([]int, error) {
	r := &reader{b: body}
	n := r.u32()
	params := make([]int, 0, n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		if form := r.byte(); form != 0x60 {
			return nil, fmt.Errorf("type %d has form %#x", i, form)
		}
		p := r.u32()
		r.take(int(p))
		r.take(int(r.u32()))
		params = append(params, int(p))
	}
	if r.err != nil {
		return nil, fmt.Errorf("reading the types: %w", r.err)
	}
	return params, nil
}

// readFunctions returns the type of each defined function.
func readFunctions(body []byte) ([]int, error) {
	r := &reader{b: body}
	n := r.u32()
	funcs := make([]int, 0, n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		funcs = append(funcs, int(r.u32()))
	}
	if r.err != nil {
		return nil, fmt.Errorf("reading the functions: %w", r.err)
	}
	return funcs, nil
}

// dataEnd returns where the active data segments of memory 0 end.
func dataEnd(body []byte) (int64, error) {
	r := &reader{b: body}
	n := r.u32()
	var end int64
	for i := uint32(0); i < n && r.err == nil; i++ {
		if flags := r.u32(); flags != 0 {
			return 0, fmt.Errorf("data segment %d has flags %d", i, flags)
		}
		if op := r.byte(); op != 0x41 {
			return 0, fmt.Errorf("data segment %d has an offset that is not an i32.const", i)
		}
		off := r.s64()
		r.byte() // end
		size := r.u32()
		r.take(int(size))
		end = max(end, off+int64(size))
	}
	if r.err != nil {
		return 0, fmt.Errorf("reading the data: %w", r.err)
	}
	return end, nil
}

// Immediates of an opcode, for skipImmediates.
const (
	immUnknown = iota
	immNone
	immU32    // an index
	immS64    // a block type, an integer constant, a heap type
	immTwoU32 // call_indirect, return_call_indirect
	immBrTable
	immSelect
	immMemarg
	immF32
	immF64
	immPrefixFC
)

// immediates is the immediates of each opcode of WebAssembly 2.0 without
// SIMD, plus tail calls; the others are immUnknown.
var immediates = func() (t [256]byte) {
	set := func(k byte, ops ...int) {
		for _, op := range ops {
			t[op] = k
		}
	}
	set(immNone, 0x00, 0x01, 0x05, 0x0b, 0x0f, 0x1a, 0x1b, 0xd1)
	for op := 0x45; op <= 0xc4; op++ { // numeric
		t[op] = immNone
	}
	set(immS64, 0x02, 0x03, 0x04, 0x41, 0x42, 0xd0)
	set(immU32, 0x0c, 0x0d, 0x10, 0x12, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x3f, 0x40, 0xd2)
	set(immTwoU32, 0x11, 0x13)
	set(immBrTable, 0x0e)
	set(immSelect, 0x1c)
	for op := 0x28; op <= 0x3e; op++ {
		t[op] = immMemarg
	}
	set(immF32, 0x43)
	set(immF64, 0x44)
	set(immPrefixFC, 0xfc)
	return t
}()

// skipImmediates reads the immediates of op; an opcode it does not know is
// refused.
func (r *reader) skipImmediates(op byte) error {
	switch immediates[op] {
	case immNone:
	case immU32:
		r.u32()
	case immS64:
		r.s64()
	case immTwoU32:
		r.u32()
		r.u32()
	case immBrTable:
		for i, n := uint32(0), r.u32(); i <= n && r.err == nil; i++ {
			r.u32()
		}
	case immSelect:
		for i, n := uint32(0), r.u32(); i < n && r.err == nil; i++ {
			r.byte()
		}
	case immMemarg:
		if align := r.u32(); align&0x40 != 0 {
			r.u32() // memory index
		}
		r.u64()
	case immF32:
		r.take(4)
	case immF64:
		r.take(8)
	case immPrefixFC:
		switch sub := r.u32(); {
		case sub <= 7:
		case sub == 8 || sub == 10 || sub == 12 || sub == 14:
			r.u32()
			r.u32()
		case sub == 9 || sub == 11 || sub == 13 || sub >= 15 && sub <= 17:
			r.u32()
		default:
			return fmt.Errorf("unknown instruction 0xfc %d at byte %d", sub, r.off)
		}
	default:
		return fmt.Errorf("unknown opcode %#x at byte %d", op, r.off-1)
	}
	return r.err
}

// reader decodes the wasm binary format; the first error sticks.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.err = errors.New("unexpected end")
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.err = errors.New("unexpected end")
		return nil
	}
	b := r.b[r.off : r.off+n]
	r.off += n
	return b
}

func (r *reader) u64() uint64 {
	if r.err != nil {
		return 0
	}
	if r.off < len(r.b) && r.b[r.off] < 0x80 {
		r.off++
		return uint64(r.b[r.off-1])
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.err = fmt.Errorf("bad LEB128 at byte %d", r.off)
		return 0
	}
	r.off += n
	return v
}

func (r *reader) u32() uint32 {
	v := r.u64()
	if v > 1<<32-1 && r.err == nil {
		r.err = fmt.Errorf("LEB128 over 32 bits at byte %d", r.off)
	}
	return uint32(v)
}

// s64 reads a signed LEB128 (block types, constants, heap types).
func (r *reader) s64() int64 {
	var v int64
	var shift uint
	for {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
		if shift >= 70 {
			r.err = fmt.Errorf("bad LEB128 at byte %d", r.off)
			return 0
		}
	}
}

func (r *reader) name() []byte { return r.take(int(r.u32())) }

func (r *reader) limits() {
	flags := r.byte()
	r.u64()
	if flags&0x01 != 0 {
		r.u64()
	}
}

func uleb(v uint32) []byte { return binary.AppendUvarint(nil, uint64(v)) }

func sleb(v int32) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// proxyFor is the env.jsFunctionProxy of a runtime: a tick (see above)
// stops the guest when the call's kill switch was tripped, else lets the
// run's attempt give its compute turn to another key (attempt.yield); any
// other call is qjs's, to the Go function of registry.
func proxyFor(registry func(api.Module) *qjs.ProxyRegistry) func(context.Context, api.Module, uint32, uint64, uint32, uint32) uint64 {
	return func(ctx context.Context, m api.Module, jsCtx uint32, this uint64, argc, argv uint32) uint64 {
		if argc == tickArgc {
			ticks.Add(1)
			if ks, _ := ctx.Value(killSwitchKey{}).(*killSwitch); ks != nil {
				if ks.tripped.Load() {
					panic(errInterrupted)
				}
				if ks.att != nil {
					ks.att.yield()
				}
			}
			return 0
		}
		return qjsProxy(registry(m))(ctx, m, jsCtx, this, argc, argv)
	}
}

// ticks counts the ticks of every runtime of the process (for tests).
var ticks atomic.Uint64

// errInterrupted is how a tick leaves a guest whose kill switch tripped.
var errInterrupted = errors.New("the sandbox stopped the guest")

// instrumentedQuickJS is qjs's QuickJS, instrumented once per process.
var instrumentedQuickJS = sync.OnceValues(func() (instrumented, error) { return instrumentModule(qjsWasm) })
