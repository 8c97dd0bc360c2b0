package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// Namespaces is the set of namespaces a run sees, each with its tools. It is
// immutable: the hub builds one per catalog and every run shares it, so a
// run costs the same whatever the number of tools. The guest gets only the
// namespaces' names when it starts; a namespace's tools are read through the
// bridge the first time the code touches that namespace (see the prelude).
type Namespaces struct {
	tools  map[string][]string // sorted
	lists  map[string]string   // the tools as a JSON array, for the guest
	setup  json.RawMessage     // the namespaces' names, a JSON array
	digest string
}

// NewNamespaces copies m into a Namespaces.
func NewNamespaces(m map[string][]string) *Namespaces {
	n := &Namespaces{tools: make(map[string][]string, len(m)), lists: make(map[string]string, len(m))}
	names := slices.Sorted(maps.Keys(m))
	h := sha256.New()
	for _, ns := range names {
		tools := slices.Clone(m[ns])
		slices.Sort(tools)
		tools = slices.Compact(tools)
		if tools == nil {
			tools = []string{}
		}
		list, _ := json.Marshal(tools)
		n.tools[ns], n.lists[ns] = tools, string(list)
		fmt.Fprintf(h, "%q:%s\n", ns, list)
	}
	if names == nil {
		names = []string{}
	}
	n.setup, _ = json.Marshal(names)
	n.digest = hex.EncodeToString(h.Sum(nil))
	return n
}

var emptyNamespaces = NewNamespaces(nil)

// same reports whether n and o hold the same namespaces and tools.
func (n *Namespaces) same(o *Namespaces) bool { return n == o || n.digest == o.digest }

// Digest identifies the set: the same namespaces with the same tools give
// the same digest.
func (n *Namespaces) Digest() string { return n.digest }

// Len is the number of namespaces.
func (n *Namespaces) Len() int { return len(n.tools) }

// Map returns a copy of the set as namespace → tool names.
func (n *Namespaces) Map() map[string][]string {
	out := make(map[string][]string, len(n.tools))
	for ns, tools := range n.tools {
		out[ns] = slices.Clone(tools)
	}
	return out
}

// Has reports whether ns.tool is in the set.
func (n *Namespaces) Has(ns, tool string) bool {
	_, ok := slices.BinarySearch(n.tools[ns], tool)
	return ok
}

// MarshalJSON writes the set as {"namespace": ["tool", …], …}.
func (n *Namespaces) MarshalJSON() ([]byte, error) { return json.Marshal(n.tools) }

// UnmarshalJSON reads what MarshalJSON wrote.
func (n *Namespaces) UnmarshalJSON(b []byte) error {
	var m map[string][]string
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("decoding namespaces: %w", err)
	}
	*n = *NewNamespaces(m)
	return nil
}
