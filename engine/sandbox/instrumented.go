package sandbox

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"
)

// The instrumented QuickJS (interrupt.go) is kept on disk beside its
// compiled code: rewriting qjs's 1 MB module takes 5–6 ms and 3.5 MB of
// fresh memory in every process, 20–30 ms of a first execute on a machine
// where each new page costs 15 µs. Its file is named for what makes it:
// qjs's QuickJS and the source of interrupt.go, which holds all of the
// instrumentation (TestInstrumentationInOneFile), so that a change to either
// is a new file, never an old rewrite taken for the new one.

//go:embed interrupt.go
var instrumenterSource []byte

// instrumentedMagic starts a file of the instrumented QuickJS; then come
// the fixed flag (1 byte), the CRC-32C of the module (4 bytes, little
// endian) and the module.
const instrumentedMagic = "capabilities instrumented QuickJS v1\n"

// instrumentedPath is the file of the instrumented QuickJS in dir (the
// cache's layout directory).
func instrumentedPath(dir string) string {
	h := sha256.New()
	h.Write(qjsIdentity())
	h.Write(instrumenterSource)
	return filepath.Join(dir, "quickjs-"+hex.EncodeToString(h.Sum(nil)[:12])+".wasm")
}

// qjsIdentity names the QuickJS module qjs embeds: the qjs module's path,
// version and checksum (go.sum's, which covers every byte of the module)
// as the build recorded them, or, in a build that recorded none (a
// replaced module, a build without module information), the module's
// bytes. Naming it by its checksum spares every process reading qjs's 1 MB
// module only to hash it: those pages of the binary would stay in the
// process's memory for as long as it runs.
func qjsIdentity() []byte {
	info, _ := debug.ReadBuildInfo()
	return qjsIdentityIn(info)
}

// qjsIdentityIn is qjsIdentity for the build info (nil: none).
func qjsIdentityIn(info *debug.BuildInfo) []byte {
	if info != nil {
		for _, m := range info.Deps {
			if m.Path != qjsModule {
				continue
			}
			if m.Replace == nil && m.Sum != "" {
				return []byte(m.Path + "@" + m.Version + " " + m.Sum)
			}
		}
	}
	return qjsWasm
}

// qjsModule is the module whose wasmBytes harden.go links to.
const qjsModule = "github.com/fastschema/qjs"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// cachedInstrumented returns the instrumented QuickJS from dir, or
// instruments it and stores it there for the next process. A file that is
// not whole is rewritten; one that cannot be written costs only the time
// to instrument.
func cachedInstrumented(dir string) (instrumented, error) {
	path := instrumentedPath(dir)
	if q, err := readInstrumented(path); err == nil {
		return q, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		slog.Warn("the sandbox's instrumented QuickJS could not be read; writing it again", "file", path, "err", err)
	}
	q, err := instrumentedQuickJS()
	if err != nil {
		return q, err
	}
	if err := writeInstrumented(path, q); err != nil {
		slog.Warn("keeping the sandbox's instrumented QuickJS", "file", path, "err", err)
	}
	return q, nil
}

func readInstrumented(path string) (instrumented, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return instrumented{}, err
	}
	head := len(instrumentedMagic) + 5
	if len(b) < head || string(b[:len(instrumentedMagic)]) != instrumentedMagic || b[len(instrumentedMagic)] > 1 {
		return instrumented{}, fmt.Errorf("reading %s: not an instrumented QuickJS of this version", path)
	}
	wasm := b[head:]
	if crc32.Checksum(wasm, castagnoli) != binary.LittleEndian.Uint32(b[head-4:head]) || !bytes.HasPrefix(wasm, []byte("\x00asm")) {
		return instrumented{}, fmt.Errorf("reading %s: the module is not whole (checksum)", path)
	}
	return instrumented{wasm: wasm, fixed: b[len(instrumentedMagic)] == 1}, nil
}

// writeInstrumented writes q to path whole or not at all (a file beside
// it, renamed over it), and removes the files other versions left there
// more than a day ago.
func writeInstrumented(path string, q instrumented) error {
	b := make([]byte, 0, len(instrumentedMagic)+5+len(q.wasm))
	b = append(b, instrumentedMagic...)
	fixed := byte(0)
	if q.fixed {
		fixed = 1
	}
	b = append(b, fixed)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(q.wasm, castagnoli))
	b = append(b, q.wasm...)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("writing the instrumented QuickJS: %w", err)
	}
	f, err := os.CreateTemp(dir, ".quickjs-*.tmp")
	if err != nil {
		return fmt.Errorf("writing the instrumented QuickJS: %w", err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("writing the instrumented QuickJS: %w", err)
	}
	old, _ := filepath.Glob(filepath.Join(dir, "quickjs-*.wasm"))
	for _, o := range old {
		if st, err := os.Stat(o); err == nil && o != path && time.Since(st.ModTime()) > 24*time.Hour {
			_ = os.Remove(o)
		}
	}
	return nil
}
