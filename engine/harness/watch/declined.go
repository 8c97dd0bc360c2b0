package watch

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"

	"github.com/capabilities-sh/capabilities/store"
)

// DeclinedFile is the file, in the store directory, of the entries whose
// import offer was declined.
const DeclinedFile = "declined-imports.json"

// Declined is one declined entry as kept on disk. The entry is kept as a
// hash of its server's command, arguments and environment (or URL): the
// environment can hold a credential, which this file must not copy.
type Declined struct {
	ID      string `json:"id"`
	Harness string `json:"harness"`
	Path    string `json:"path"`
	Name    string `json:"name"` // the server's name when declined, for people
}

type declined struct {
	path    string
	entries map[string]Declined
}

type declinedDoc struct {
	Declined []Declined `json:"declined"`
}

func loadDeclined(path string) (*declined, error) {
	d := &declined{path: path, entries: map[string]Declined{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading declined imports: %w", err)
	}
	var doc declinedDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("reading declined imports %s: %w", path, err)
	}
	for _, e := range doc.Declined {
		d.entries[e.ID] = e
	}
	return d, nil
}

func (d *declined) has(id string) bool { _, ok := d.entries[id]; return ok }

func (d *declined) add(id, harnessName, path, name string) {
	d.entries[id] = Declined{ID: id, Harness: harnessName, Path: path, Name: name}
}

// save writes the file atomically, mode 600.
func (d *declined) save() error {
	doc := declinedDoc{Declined: make([]Declined, 0, len(d.entries))}
	for _, e := range d.entries {
		doc.Declined = append(doc.Declined, e)
	}
	sort.Slice(doc.Declined, func(i, j int) bool { return doc.Declined[i].ID < doc.Declined[j].ID })
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding declined imports: %w", err)
	}
	return store.WriteFileAtomic(d.path, append(data, '\n'))
}

// entryID names an entry: the harness, the file and the server's key.
func entryID(harnessName, path, key string) string {
	sum := sha256.Sum256([]byte(harnessName + "\x00" + path + "\x00" + key))
	return hex.EncodeToString(sum[:])
}
