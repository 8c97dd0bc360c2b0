package sandbox

import (
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// With CloseOnContextDone, wazero 1.9 compiles a check of the module's
// closed flag into every loop header (the interrupt: see harden.go, gap 3)
// and, on every call into the module, starts a goroutine that waits on the
// call's ctx to set that flag. A trivial run makes about 50 such calls, and
// each goroutine may wake an idle vCPU (on this VM, a large part of an
// execute that follows an idle moment). The sandbox needs only the flag:
// once the checks are compiled in, the goroutine is switched off (the
// compiled module's ensureTermination, read only on each call to decide on
// the goroutine, is set to false), and killSwitch.trip sets the flag itself,
// as that goroutine would have: wazero's closeWithExitCodeWithoutClosingResource,
// which leaves the module's resources to the call in progress to close.
//
// Both are wazero internals of the pinned version, reached by name and
// checked by type; if either is missing, the goroutines stay on (the kill
// switch is still the ctx of every call) and checkInterrupt still proves
// that a runaway guest stops.

//go:linkname closeModuleNow github.com/tetratelabs/wazero/internal/wasm.(*ModuleInstance).closeWithExitCodeWithoutClosingResource
func closeModuleNow(m unsafe.Pointer, exitCode uint32) error

var direct struct {
	once sync.Once
	on   bool // trip sets the closed flag; calls start no goroutine
	err  error
}

// moduleInstance is the *wasm.ModuleInstance behind m.
func moduleInstance(m api.Module) (unsafe.Pointer, error) {
	if c, ok := m.(*cachedModule); ok {
		m = c.Module
	}
	v := reflect.ValueOf(m)
	if v.Kind() != reflect.Pointer || v.Type().String() != "*wasm.ModuleInstance" {
		return nil, fmt.Errorf("the wasm module is a %T, not the *wasm.ModuleInstance of wazero 1.9", m)
	}
	return v.UnsafePointer(), nil
}

// directInterrupt switches off the goroutine per call, for every module of
// the compiled QuickJS (m is one of them), once per process.
func directInterrupt(m api.Module) error {
	direct.once.Do(func() {
		if _, err := moduleInstance(m); err != nil {
			direct.err = err
			return
		}
		eng := reflect.ValueOf(m)
		if c, ok := m.(*cachedModule); ok {
			eng = reflect.ValueOf(c.Module)
		}
		eng = eng.Elem().FieldByName("Engine")
		if !eng.IsValid() || eng.Kind() != reflect.Interface || eng.IsNil() || eng.Elem().Kind() != reflect.Pointer {
			direct.err = fmt.Errorf("the wasm module has no module engine")
			return
		}
		parent := eng.Elem().Elem().FieldByName("parent")
		if !parent.IsValid() || parent.Kind() != reflect.Pointer || parent.IsNil() {
			direct.err = fmt.Errorf("the module engine %v has no compiled module", eng.Elem().Type())
			return
		}
		flag := parent.Elem().FieldByName("ensureTermination")
		if !flag.IsValid() || flag.Kind() != reflect.Bool || !flag.Bool() {
			direct.err = fmt.Errorf("the compiled module %v has no ensureTermination set", parent.Type())
			return
		}
		*(*bool)(unsafe.Pointer(flag.UnsafeAddr())) = false
		direct.on = true
	})
	return direct.err
}

// stop sets the closed flag of the module the kill switch guards (when the
// goroutine per call is off), so that its running code leaves at its next
// loop header.
func (k *killSwitch) stop(mod unsafe.Pointer) {
	if mod != nil && direct.on {
		_ = closeModuleNow(mod, sys.ExitCodeContextCanceled)
	}
}
