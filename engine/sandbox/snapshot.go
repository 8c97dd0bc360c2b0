package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	_ "unsafe" // go:linkname

	"github.com/fastschema/qjs"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	wsp1 "github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// A runtime is made from a snapshot: building one from scratch (QuickJS's
// runtime and context with every intrinsic, the prelude evaluated, the
// namespaces installed) costs ≈2.5 ms of CPU, while everything it builds
// lives in the module's linear memory, ≈450 KB. So the driver builds one
// runtime per namespace set the long way (the template), copies its memory
// while it is at rest, and makes every other runtime of that set by
// instantiating the QuickJS module afresh and writing the copy over its
// memory (≈0.1 ms).
//
// Why the copy is the same runtime: QuickJS keeps all of its state in linear
// memory (the JSRuntime, the JSContext, the heap, the job queue); the
// module's one mutable global is the C stack pointer, which is back at its
// initial value whenever no call is in progress, and its table is fixed by
// the module (no table.set in QuickJS). What is outside the module is Go
// state of qjs: the proxy registry (the ids of the Go functions that the JS
// function objects in memory name: the host function and its Context,
// registered as 1 and 2 in the template and again in each copy) and the
// handles of the runtime, the context and the prelude's entry points, raw
// pointers into memory that are equal in the copy.
//
// Why no state leaks between runs: a copy starts from the template's memory
// as it was before any run (the snapshot is never written to; the template
// runtime itself serves one run after the snapshot was taken, like any
// other), in a new module instance. A copy whose run ended cleanly is reset
// for another run (Driver.reset): the whole of its memory is overwritten by
// the snapshot again, which is all of its state since the module is fixed
// (instrumented.fixed: one mutable global, the stack pointer, at rest
// between calls; the countdown; no instruction that changes a table). A
// runtime stopped by a limit or a trap, one whose memory grew, and one whose
// Go side differs from the snapshot's are closed instead.
type snapshot struct {
	nss  *Namespaces
	mem  []byte // linear memory at rest, after newVM
	opt  qjs.Option
	rt   uint64 // the JSRuntime handle
	ctx  uint64 // the JSContext handle
	ids  [2]uint64
	vals [3]uint64 // start, deliver, undefined
}

// qjsProxy makes the env.jsFunctionProxy host function that calls the Go
// functions of registry (qjs.New makes the same for its own registry).
//
//go:linkname qjsProxy github.com/fastschema/qjs.createFuncProxyWithRegistry
func qjsProxy(registry *qjs.ProxyRegistry) qjs.JsFunctionProxy

// takeSnapshot copies v's memory. v must be at rest (just built by newVM,
// no call in progress) and is not changed.
func takeSnapshot(v *vm) (*snapshot, error) {
	reg := *field[*qjs.ProxyRegistry](v.rt, "registry")
	if n := reg.Len(); n != 2 {
		return nil, fmt.Errorf("snapshotting a runtime: %d Go functions registered, want 2 (the host function and its context)", n)
	}
	m := *fieldOf[api.Memory](v.rt.Mem(), "mem")
	buf, ok := m.Read(0, m.Size())
	if !ok {
		return nil, fmt.Errorf("snapshotting a runtime: reading its memory")
	}
	return &snapshot{
		nss:  v.nss,
		mem:  bytes.Clone(buf),
		opt:  *field[qjs.Option](v.rt, "option"),
		rt:   v.rt.Raw(),
		ctx:  v.rt.Context().Raw(),
		ids:  [2]uint64{1, 2},
		vals: [3]uint64{v.start.Raw(), v.deliver.Raw(), v.undefined.Raw()},
	}, nil
}

// host is the one wazero runtime that every copied runtime's module is
// instantiated in, with the WASI and env host modules instantiated once
// (compiling them took most of a copy's time). A module is closed alone,
// by closeRuntime or by its kill switch (CloseOnContextDone); what it sees
// of WASI (its filesystem, clocks, output) is its own module config.
var host struct {
	once sync.Once
	wrt  wazero.Runtime
	err  error
	next atomic.Uint64
	regs sync.Map // module name → *qjs.ProxyRegistry
}

func sharedRuntime() (wazero.Runtime, error) {
	host.once.Do(func() {
		ctx := context.Background()
		wrt := wazero.NewRuntimeWithConfig(ctx, qjsConfig)
		if _, err := wsp1.Instantiate(ctx, wrt); err != nil {
			host.err = fmt.Errorf("instantiating WASI: %w", err)
			return
		}
		if _, err := wrt.NewHostModuleBuilder("env").NewFunctionBuilder().WithFunc(proxy).Export("jsFunctionProxy").Instantiate(ctx); err != nil {
			host.err = fmt.Errorf("instantiating the host module: %w", err)
			return
		}
		host.wrt = wrt
	})
	return host.wrt, host.err
}

// proxy is env.jsFunctionProxy for every copied runtime: it calls the Go
// function of the calling module's registry.
var proxy = proxyFor(func(module api.Module) *qjs.ProxyRegistry {
	reg, ok := host.regs.Load(module.Name())
	if !ok {
		panic(fmt.Sprintf("sandbox: module %q has no Go functions", module.Name()))
	}
	return reg.(*qjs.ProxyRegistry)
})

// fromSnapshot makes a runtime whose memory is a copy of s: the same
// runtime newVM(s.nss) builds, without building it.
func (d *Driver) fromSnapshot(s *snapshot) (v *vm, err error) {
	wrt, err := sharedRuntime()
	if err != nil {
		return nil, fmt.Errorf("copying a runtime: %w", err)
	}
	mem := &cappedMemory{limit: uint64(d.memBytes + memorySlack), reserve: uint64(len(s.mem)), pool: &d.spare}
	ks := &killSwitch{Context: experimental.WithMemoryAllocator(context.Background(), mem), done: make(chan struct{})}
	name := "qjs-" + strconv.FormatUint(host.next.Add(1), 10)
	reg := qjs.NewProxyRegistry()
	host.regs.Store(name, reg)
	var mod api.Module
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("copying a runtime: %v", r)
		}
		if err != nil {
			host.regs.Delete(name)
			if mod != nil {
				_ = mod.Close(context.Background())
			}
		}
	}()
	mod, err = wrt.InstantiateModule(ks, qjsCompiled, wazero.NewModuleConfig().
		WithName(name).
		WithStartFunctions(s.opt.StartFunctionName).
		WithSysWalltime().WithSysNanotime().WithSysNanosleep().
		WithFSConfig(wazero.NewFSConfig().WithDirMount(d.root.dir, "/")).
		WithStdout(io.Discard).WithStderr(io.Discard))
	if err != nil {
		return nil, fmt.Errorf("copying a runtime: instantiating QuickJS: %w", err)
	}
	m := mod.Memory()
	pages := uint32(len(s.mem) / 65536)
	if have := m.Size() / 65536; have < pages {
		if _, ok := m.Grow(pages - have); !ok {
			return nil, fmt.Errorf("copying a runtime: growing its memory to %d bytes", len(s.mem))
		}
	}
	if m.Size() != uint32(len(s.mem)) || !m.Write(0, s.mem) {
		return nil, fmt.Errorf("copying a runtime: memory of %d bytes for a snapshot of %d", m.Size(), len(s.mem))
	}

	rt := new(qjs.Runtime)
	opt := s.opt
	opt.Context, opt.CWD, opt.ProxyFunction = ks, d.root.dir, nil
	*field[api.Module](rt, "module") = mod
	*field[api.Function](rt, "malloc") = mod.ExportedFunction("malloc")
	*field[api.Function](rt, "free") = mod.ExportedFunction("free")
	qm := new(qjs.Mem)
	*fieldOf[api.Memory](qm, "mem") = m
	*field[*qjs.Mem](rt, "mem") = qm
	*field[qjs.Option](rt, "option") = opt
	*field[*qjs.Handle](rt, "handle") = qjs.NewHandle(rt, s.rt)
	c := &qjs.Context{Context: ks}
	*fieldOf[*qjs.Handle](c, "handle") = qjs.NewHandle(rt, s.ctx)
	*fieldOf[*qjs.Runtime](c, "runtime") = rt
	*field[*qjs.Context](rt, "context") = c
	*field[*qjs.ProxyRegistry](rt, "registry") = reg
	cacheFunctions(rt)
	(*field[api.Module](rt, "module")).(*cachedModule).warmFunctions()

	v = &vm{rt: rt, nss: s.nss, snap: s, mem: mem, ks: ks}
	if id := reg.Register(qjs.Function(v.host)); id != s.ids[0] {
		return nil, fmt.Errorf("copying a runtime: the host function registered as %d, want %d", id, s.ids[0])
	}
	if id := reg.Register(c); id != s.ids[1] {
		return nil, fmt.Errorf("copying a runtime: its context registered as %d, want %d", id, s.ids[1])
	}
	d.copies.Add(1)
	val := func(raw uint64) *qjs.Value { return c.NewValue(qjs.NewHandle(rt, raw)) }
	v.start, v.deliver, v.undefined = val(s.vals[0]), val(s.vals[1]), val(s.vals[2])
	return v, nil
}

// resettable says whether v may be reset to its snapshot for another run
// (reset). The module keeps no state outside its memory
// (instrumented.fixed): its stack pointer is back at its initial value, as
// after every call that returned, and its tables are never changed. Refused:
// a runtime built by newVM (no snapshot), one stopped (its kill switch
// tripped: it may be mid-call), one whose memory grew (it cannot shrink) or
// hit its cap, one with more Go functions registered than the snapshot's
// two, one that holds a handle on the global object.
func (v *vm) resettable() error {
	switch {
	case v.snap == nil:
		return errors.New("resetting a runtime: it is not a copy")
	case v.ks.tripped.Load():
		return errors.New("resetting a runtime: it was stopped")
	case len(v.mem.buf) != len(v.snap.mem):
		return fmt.Errorf("resetting a runtime: its memory grew to %d bytes", len(v.mem.buf))
	case v.mem.hit.Load():
		return errors.New("resetting a runtime: it reached its memory cap")
	case (*field[*qjs.ProxyRegistry](v.rt, "registry")).Len() != 2:
		return errors.New("resetting a runtime: Go functions were registered in it")
	case *fieldOf[*qjs.Value](v.rt.Context(), "global") != nil:
		return errors.New("resetting a runtime: it holds a handle on the global object")
	}
	return nil
}

// reset makes v, resettable and idle since, a copy of its snapshot again:
// its memory is overwritten whole by the snapshot, and it gets a new kill
// switch.
func (d *Driver) reset(v *vm) error {
	m := *fieldOf[api.Memory](v.rt.Mem(), "mem")
	if !m.Write(0, v.snap.mem) {
		return errors.New("resetting a runtime: writing its memory")
	}
	ks := &killSwitch{Context: v.ks.Context, done: make(chan struct{})}
	v.rt.Context().Context = ks
	field[qjs.Option](v.rt, "option").Context = ks
	v.ks, v.att = ks, nil
	d.reuses.Add(1)
	return nil
}

// snapshots keeps the snapshots of the last few namespace sets.
type snapshots struct {
	mu   sync.Mutex
	last []*snapshot // most recent first
}

const keptSnapshots = 4

func (s *snapshots) get(nss *Namespaces) *snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, sn := range s.last {
		if sn.nss.same(nss) {
			copy(s.last[1:i+1], s.last[:i])
			s.last[0] = sn
			return sn
		}
	}
	return nil
}

func (s *snapshots) put(sn *snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.last {
		if o.nss.same(sn.nss) {
			return
		}
	}
	s.last = append([]*snapshot{sn}, s.last...)
	if len(s.last) > keptSnapshots {
		s.last = s.last[:keptSnapshots]
	}
}

// keep drops the snapshots of every set but nss (all when nil is not one
// of them: then only the most recent stays).
func (s *snapshots) keep(nss *Namespaces) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sn := range s.last {
		if nss != nil && sn.nss.same(nss) {
			s.last = []*snapshot{sn}
			return
		}
	}
	if len(s.last) > 1 {
		s.last = s.last[:1]
	}
}
