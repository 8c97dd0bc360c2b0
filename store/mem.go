package store

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"sync"
)

// Mem is an in-memory Store for unit tests of logic. It behaves like File
// (the same conformance suite runs against both) but shares nothing across
// processes.
type Mem struct {
	mu      sync.Mutex
	records map[Kind]map[string][]byte
	logs    map[Kind]map[string][][]byte
	holds   map[string]bool
	gen     int64 // writes that bump the generation (generation.go)
	feed    feed  // Changes' subscribers (changes.go)
}

var _ Store = (*Mem)(nil)

// NewMem returns an empty in-memory store.
func NewMem() *Mem {
	return &Mem{records: map[Kind]map[string][]byte{}, logs: map[Kind]map[string][][]byte{}}
}

func (m *Mem) Get(ctx context.Context, kind Kind, id string, v any) error {
	if err := check(kind, id); err != nil {
		return err
	}
	m.mu.Lock()
	data, ok := m.records[kind][id]
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("reading %s/%s: %w", kind, id, ErrNotFound)
	}
	return DecodeRecord(string(kind)+"/"+id, data, v)
}

func (m *Mem) Put(ctx context.Context, kind Kind, id string, v any) error {
	if err := check(kind, id); err != nil {
		return err
	}
	b, err := marshal(v)
	if err != nil {
		return err
	}
	defer m.feed.publish(Change{Kind: kind, ID: id}) // once unlocked
	m.mu.Lock()
	defer m.mu.Unlock()
	m.put(kind, id, b)
	return nil
}

func (m *Mem) put(kind Kind, id string, b []byte) {
	if m.records[kind] == nil {
		m.records[kind] = map[string][]byte{}
	}
	m.records[kind][id] = b
	if bumps(kind) {
		m.gen++
	}
}

func (m *Mem) Update(ctx context.Context, kind Kind, id string, fn func([]byte) ([]byte, error)) (err error) {
	if err := check(kind, id); err != nil {
		return err
	}
	defer func() { // once unlocked
		if err == nil {
			m.feed.publish(Change{Kind: kind, ID: id})
		}
	}()
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.records[kind][id]
	if ok {
		old = bytes.Clone(old)
	}
	next, err := fn(old)
	if err != nil {
		return err
	}
	m.put(kind, id, bytes.Clone(next))
	return nil
}

func (m *Mem) Delete(ctx context.Context, kind Kind, id string) error {
	if err := check(kind, id); err != nil {
		return err
	}
	defer m.feed.publish(Change{Kind: kind, ID: id}) // once unlocked
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.records[kind], id)
	delete(m.logs[kind], id)
	if bumps(kind) {
		m.gen++
	}
	return nil
}

func (m *Mem) List(ctx context.Context, kind Kind) ([]string, error) {
	if err := validKind(kind); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := make([]string, 0, len(m.records[kind]))
	for id := range m.records[kind] {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}

func (m *Mem) Append(ctx context.Context, kind Kind, id string, line []byte) error {
	if err := check(kind, id); err != nil {
		return err
	}
	if bytes.ContainsAny(line, "\n\r") {
		return fmt.Errorf("appending to %s/%s: a log line must not contain a newline", kind, id)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.logs[kind] == nil {
		m.logs[kind] = map[string][][]byte{}
	}
	m.logs[kind][id] = append(m.logs[kind][id], bytes.Clone(line))
	return nil
}

func (m *Mem) OpenLog(ctx context.Context, kind Kind, id string) (Log, error) {
	if err := check(kind, id); err != nil {
		return nil, err
	}
	return memLog{m: m, kind: kind, id: id}, nil
}

type memLog struct {
	m    *Mem
	kind Kind
	id   string
}

func (l memLog) Append(line []byte) error {
	return l.m.Append(context.Background(), l.kind, l.id, line)
}

// Write is Append: the memory store has no drive to wait for.
func (l memLog) Write(line []byte) error { return l.Append(line) }

func (memLog) Sync() error { return nil }

func (memLog) Close() error { return nil }

func (m *Mem) Hold(ctx context.Context, kind Kind, id string) (func(), error) {
	if err := check(kind, id); err != nil {
		return nil, err
	}
	key := string(kind) + "/" + id
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.holds == nil {
		m.holds = map[string]bool{}
	}
	if m.holds[key] {
		return nil, fmt.Errorf("claiming %s: %w", key, ErrBusy)
	}
	m.holds[key] = true
	return func() {
		m.mu.Lock()
		delete(m.holds, key)
		m.mu.Unlock()
	}, nil
}

func (m *Mem) Held(ctx context.Context, kind Kind, id string) (bool, error) {
	if err := check(kind, id); err != nil {
		return true, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.holds[string(kind)+"/"+id], nil
}

func (m *Mem) ReadLog(ctx context.Context, kind Kind, id string) ([][]byte, error) {
	if err := check(kind, id); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out [][]byte
	for _, l := range m.logs[kind][id] {
		out = append(out, bytes.Clone(l))
	}
	return out, nil
}
