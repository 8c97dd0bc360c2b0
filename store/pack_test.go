//go:build linux

package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/capabilities-sh/capabilities/store"
)

type packedRun struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Result string `json:"result"`
}

// TestPutFinalShares: run records that will not change share files, and
// each reads, lists, updates and deletes as a record of its own, in this
// store and in another opened on the same folder.
func TestPutFinalShares(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hub")
	f, _, err := store.Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	const n = 70 // more than one shared file holds
	for i := range n {
		id := fmt.Sprintf("r%03d", i)
		if err := store.PutFinal(ctx, f, store.Runs, id, packedRun{ID: id, Status: "completed", Result: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := store.Packed(f); got != n {
		t.Fatalf("%d records packed, want %d", got, n)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(f.Path(store.Runs, "r000"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Nlink < 2 {
		t.Fatalf("r000's file has %d names: not shared", st.Nlink)
	}
	fi, err := os.Stat(f.Path(store.Runs, "r000"))
	if err != nil {
		t.Fatal(err)
	}
	if got := store.RecordBytes(fi); got*int64(st.Nlink) > fi.Size() || got == fi.Size() {
		t.Errorf("RecordBytes %d of a file of %d bytes with %d names", got, fi.Size(), st.Nlink)
	}

	other, err := store.Open(dir) // another process
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	check := func(s store.Store, id, want string) {
		t.Helper()
		r, err := store.Get[packedRun](ctx, s, store.Runs, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.ID != id || r.Result != want {
			t.Fatalf("%s read %+v, want result %s", id, r, want)
		}
	}
	for i := range n {
		check(f, fmt.Sprintf("r%03d", i), fmt.Sprint(i))
		check(other, fmt.Sprintf("r%03d", i), fmt.Sprint(i))
	}
	ids, err := other.List(ctx, store.Runs)
	if err != nil || len(ids) != n {
		t.Fatalf("List: %d ids, %v; want %d", len(ids), err, n)
	}

	// Replaced and deleted one by one; the records beside them stay.
	if err := store.UpdateJSON(ctx, other, store.Runs, "r001", func(r *packedRun) (*packedRun, error) {
		r.Result = "changed"
		return r, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := other.Delete(ctx, store.Runs, "r002"); err != nil {
		t.Fatal(err)
	}
	check(f, "r001", "changed")
	check(f, "r000", "0")
	check(f, "r003", "3")
	if _, err := store.Get[packedRun](ctx, f, store.Runs, "r002"); err == nil {
		t.Fatal("r002 read after its delete")
	}

	// A line a killed process did not finish, at the end of a shared
	// file, hides no record.
	fh, err := os.OpenFile(f.Path(store.Runs, "r003"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString(`r999 {"id":"r99`); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	check(other, "r003", "3")
	check(other, "r000", "0")

	// A record too large to share is written alone; a record that exists
	// is replaced.
	big := make([]byte, 9<<10)
	for i := range big {
		big[i] = 'x'
	}
	if err := store.PutFinal(ctx, f, store.Runs, "rbig", packedRun{ID: "rbig", Result: string(big)}); err != nil {
		t.Fatal(err)
	}
	check(other, "rbig", string(big))
	if err := store.PutFinal(ctx, f, store.Runs, "r000", packedRun{ID: "r000", Result: "again"}); err != nil {
		t.Fatal(err)
	}
	check(other, "r000", "again")
	// After Close (the store stays usable) a record is written alone.
	f.Close()
	if err := store.PutFinal(ctx, f, store.Runs, "rclosed", packedRun{ID: "rclosed", Result: "alone"}); err != nil {
		t.Fatal(err)
	}
	check(other, "rclosed", "alone")
	if err := syscall.Stat(f.Path(store.Runs, "rclosed"), &st); err != nil || st.Nlink != 1 {
		t.Errorf("a record written after Close: %d names, %v", st.Nlink, err)
	}
	if problems, _ := store.CheckModes(dir); len(problems) > 0 {
		t.Errorf("modes: %v", problems)
	}
}
