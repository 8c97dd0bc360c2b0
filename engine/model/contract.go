package model

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
)

// UpstreamTool is a tool as an upstream lists it in tools/list.
type UpstreamTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
	// Secured: an OpenAPI operation that requires the source's credential
	// (a call without one waits for a connection).
	Secured bool `json:"secured,omitempty"`
}

// NewTools gives each upstream tool of one namespace its address and
// contract. Tools keep the upstream order; a repeated name keeps its first
// definition.
func NewTools(namespace string, upstream []UpstreamTool) []Tool {
	names := make([]string, len(upstream))
	for i, u := range upstream {
		names[i] = u.Name
	}
	idents := ToolIdents(names)
	seen := map[string]bool{}
	tools := make([]Tool, 0, len(upstream))
	for _, u := range upstream {
		if seen[u.Name] {
			continue
		}
		seen[u.Name] = true
		tools = append(tools, Tool{
			Address:      namespace + "." + idents[u.Name],
			Name:         u.Name,
			Title:        u.Title,
			Description:  u.Description,
			InputSchema:  u.InputSchema,
			OutputSchema: u.OutputSchema,
			Annotations:  u.Annotations,
			Secured:      u.Secured,
			Contract:     ContractDigest(u),
		})
	}
	return tools
}

// ContractDigest is the hex SHA-256 of the tool's contract: the canonical
// JSON (object keys sorted, no insignificant whitespace, numbers as written)
// of {name, description, inputSchema, outputSchema, annotations}. Absent
// fields are null. Any change to what the model or a person relies on — the
// text, the types, the hints — changes the digest.
func ContractDigest(u UpstreamTool) string {
	var ann json.RawMessage
	if u.Annotations != nil {
		ann, _ = json.Marshal(u.Annotations)
	}
	fields := []struct {
		key string
		val json.RawMessage
	}{
		{"annotations", ann},
		{"description", mustJSON(u.Description)},
		{"inputSchema", u.InputSchema},
		{"name", mustJSON(u.Name)},
		{"outputSchema", u.OutputSchema},
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(mustJSON(f.key))
		buf.WriteByte(':')
		if err := canonical(&buf, f.val); err != nil {
			// Not valid JSON: digest the raw bytes as a string so the
			// contract still changes when they do.
			buf.Write(mustJSON(string(f.val)))
		}
	}
	buf.WriteByte('}')
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:])
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// Canonical returns the canonical form of a JSON value: object keys sorted,
// no insignificant whitespace, numbers as written.
func Canonical(raw json.RawMessage) ([]byte, error) {
	var buf bytes.Buffer
	if err := canonical(&buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func canonical(buf *bytes.Buffer, raw json.RawMessage) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		buf.WriteString("null")
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("decoding JSON: %w", err)
	}
	if dec.More() {
		return fmt.Errorf("decoding JSON: trailing data")
	}
	writeCanonical(buf, v)
	return nil
}

func writeCanonical(buf *bytes.Buffer, v any) {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.Write(mustJSON(k))
			buf.WriteByte(':')
			writeCanonical(buf, v[k])
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeCanonical(buf, e)
		}
		buf.WriteByte(']')
	case json.Number:
		buf.WriteString(v.String())
	default:
		buf.Write(mustJSON(v))
	}
}
