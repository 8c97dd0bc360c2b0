package main

import (
	"bytes"
	"encoding/binary"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCommittedIconsAreCurrent regenerates every icon and compares it with
// the committed file: the committed icons are this program's output (run
// `go run ./build/icons` after changing it).
func TestCommittedIconsAreCurrent(t *testing.T) {
	dir := t.TempDir()
	if err := generate(dir); err != nil {
		t.Fatal(err)
	}
	var stale []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		want, _ := os.ReadFile(path)
		got, err := os.ReadFile(filepath.Join("..", rel))
		if err != nil || !bytes.Equal(got, want) {
			stale = append(stale, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) > 0 {
		t.Errorf("committed icons differ from what build/icons draws (run go run ./build/icons from the repository root): %v", stale)
	}
}

// TestPlatformIconSizes reads the committed .ico and .icns back: each holds
// a PNG of every size its platform asks for, of the size its entry says.
func TestPlatformIconSizes(t *testing.T) {
	t.Run("windows icon.ico", func(t *testing.T) {
		data, err := os.ReadFile("../windows/icon.ico")
		if err != nil {
			t.Fatal(err)
		}
		le := binary.LittleEndian
		if len(data) < 6 || le.Uint16(data[2:]) != 1 {
			t.Fatalf("not an icon file")
		}
		var got []int
		for i := range int(le.Uint16(data[4:])) {
			e := data[6+16*i:]
			size, off := le.Uint32(e[8:]), le.Uint32(e[12:])
			declared := int(e[0])
			if declared == 0 {
				declared = 256
			}
			if w := pngWidth(t, data[off:off+size]); w != declared {
				t.Errorf("entry %d says %d px, holds %d px", i, declared, w)
			}
			got = append(got, declared)
		}
		if diff := cmp.Diff(icoSizes, got); diff != "" {
			t.Errorf("sizes (-want +got):\n%s", diff)
		}
	})
	t.Run("macOS icons.icns", func(t *testing.T) {
		data, err := os.ReadFile("../darwin/icons.icns")
		if err != nil {
			t.Fatal(err)
		}
		if string(data[:4]) != "icns" || int(binary.BigEndian.Uint32(data[4:])) != len(data) {
			t.Fatalf("not an icns file of its declared length")
		}
		got := map[string]int{}
		for rest := data[8:]; len(rest) >= 8; {
			n := binary.BigEndian.Uint32(rest[4:])
			got[string(rest[:4])] = pngWidth(t, rest[8:n])
			rest = rest[n:]
		}
		want := map[string]int{}
		for _, e := range icnsTypes {
			want[e.typ] = e.size
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("entries: type → px (-want +got):\n%s", diff)
		}
	})
}

func pngWidth(t *testing.T, b []byte) int {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("decoding an embedded png: %v", err)
	}
	if r := img.Bounds(); r.Dx() != r.Dy() {
		t.Errorf("a %dx%d icon is not square", r.Dx(), r.Dy())
	}
	return img.Bounds().Dx()
}
