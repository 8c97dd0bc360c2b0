// Package openapi makes an OpenAPI 3.0/3.1 or Swagger 2.0 document a source
// of tools: each operation is a tool whose input schema joins its parameters
// and request body, and a call is an HTTP request built from the arguments
// and sent only to the server origin the person reviewed.
//
// Loading and $ref resolution are kin-openapi's (Swagger 2.0 through its
// openapi2conv); this package turns the resolved operations into tools,
// builds requests and reads answers.
package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"

	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	yaml4 "go.yaml.in/yaml/v4"
)

// MaxDocumentBytes bounds a document the hub reads (GitHub's REST
// description is about 12 MB).
const MaxDocumentBytes = 32 << 20

// IsDocumentLocation reports whether an argument of `hub add` names an
// OpenAPI document rather than an MCP endpoint: a local file, or a URL
// whose path ends in .json, .yaml or .yml or names openapi or swagger.
func IsDocumentLocation(arg string) bool {
	if !strings.Contains(arg, "://") {
		st, err := os.Stat(arg)
		return err == nil && st.Mode().IsRegular()
	}
	u, err := url.Parse(arg)
	if err != nil {
		return false
	}
	p := strings.ToLower(u.Path)
	for _, s := range []string{".json", ".yaml", ".yml"} {
		if strings.HasSuffix(p, s) {
			return true
		}
	}
	return strings.Contains(p, "openapi") || strings.Contains(p, "swagger")
}

// Read fetches a document's bytes: a file, or a URL through client (which
// should refuse redirects to another origin). It refuses anything larger
// than MaxDocumentBytes and an HTML page.
func Read(ctx context.Context, client *http.Client, location string) ([]byte, error) {
	if !strings.Contains(location, "://") {
		f, err := os.Open(location)
		if err != nil {
			return nil, fmt.Errorf("reading the document: %w", err)
		}
		defer f.Close()
		return readCapped(f, location)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, location, nil)
	if err != nil {
		return nil, fmt.Errorf("reading the document: %w", err)
	}
	req.Header.Set("Accept", "application/json, application/yaml;q=0.9, */*;q=0.1")
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return nil, fmt.Errorf("reading the document: %s did not answer in time: %w", location, err)
		}
		return nil, fmt.Errorf("reading the document: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("reading the document: %s answered %s", location, resp.Status)
	}
	b, err := readCapped(resp.Body, location)
	if err != nil {
		return nil, err
	}
	if ct := resp.Header.Get("Content-Type"); strings.Contains(ct, "text/html") || looksHTML(b) {
		return nil, fmt.Errorf("reading the document: %s answered an HTML page, not an OpenAPI document (give the URL of the JSON or YAML description itself)", location)
	}
	return b, nil
}

func readCapped(r io.Reader, location string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxDocumentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the document %s: %w", location, err)
	}
	if len(b) > MaxDocumentBytes {
		return nil, fmt.Errorf("reading the document %s: it is larger than %d MB, the most the hub reads", location, MaxDocumentBytes>>20)
	}
	return b, nil
}

func looksHTML(b []byte) bool {
	t := bytes.ToLower(bytes.TrimSpace(b[:min(len(b), 512)]))
	return bytes.HasPrefix(t, []byte("<!doctype html")) || bytes.HasPrefix(t, []byte("<html"))
}

// Parse loads and resolves a document (JSON or YAML; OpenAPI 3.0, 3.1 or
// Swagger 2.0, converted to 3.0). location is where it came from, for
// messages; references to other documents are not followed (ParseWith
// follows them).
func Parse(ctx context.Context, data []byte, location string) (*openapi3.T, error) {
	return ParseWith(ctx, data, location, nil)
}

// ParseWith is Parse with refs, which reads the other documents the
// document refers to (nil: references to other documents are refused).
func ParseWith(ctx context.Context, data []byte, location string, refs *RefReader) (*openapi3.T, error) {
	if looksHTML(data) {
		return nil, fmt.Errorf("parsing %s: it is an HTML page, not an OpenAPI document", location)
	}
	var (
		root *yaml4.Node
		js   []byte // the document as JSON, for kin-openapi's JSON decoding
	)
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		n, err := jsonToNode(data)
		if err != nil {
			// decode says where the JSON is wrong.
			if _, derr := decode(data); derr != nil {
				err = derr
			}
			return nil, fmt.Errorf("parsing %s: %w", location, err)
		}
		root, js = n, data
	} else {
		raw, err := decode(data)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", location, err)
		}
		if _, ok := raw.(map[string]any); !ok {
			return nil, fmt.Errorf("parsing %s: the document is not an object with an openapi or swagger field", location)
		}
		if js, err = json.Marshal(raw); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", location, err)
		}
		if root, err = jsonToNode(js); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", location, err)
		}
	}
	if root.Kind != yaml4.MappingNode {
		return nil, fmt.Errorf("parsing %s: the document is not an object with an openapi or swagger field", location)
	}
	openapiV, swaggerV := topScalar(root, "openapi"), topScalar(root, "swagger")
	loader := openapi3.NewLoader()
	loader.Context = ctx
	base := refs.base(location)
	if refs != nil {
		loader.ReadFromURIFunc = refs.read
	}
	var (
		doc *openapi3.T
		err error
	)
	switch {
	case swaggerV != nil:
		if v := swaggerV.Value; !strings.HasPrefix(v, "2") {
			return nil, fmt.Errorf("parsing %s: swagger %s is not a version the hub reads (2.0, or OpenAPI 3.0/3.1)", location, v)
		}
		var d2 openapi2.T
		if err := json.Unmarshal(js, &d2); err != nil {
			return nil, fmt.Errorf("parsing %s as Swagger 2.0: %w", location, err)
		}
		if doc, err = openapi2conv.ToV3(&d2); err != nil {
			return nil, fmt.Errorf("converting %s from Swagger 2.0: %w", location, refError(err))
		}
	case openapiV != nil:
		if v := openapiV.Value; !strings.HasPrefix(v, "3.0") && !strings.HasPrefix(v, "3.1") {
			return nil, fmt.Errorf("parsing %s: openapi %s is not a version the hub reads (3.0, 3.1, or Swagger 2.0)", location, v)
		}
		if doc, err = decodeV3(root, js); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", location, err)
		}
	default:
		return nil, fmt.Errorf("parsing %s: no openapi or swagger field: not an OpenAPI document", location)
	}
	if err := loader.ResolveRefsIn(doc, base); err != nil {
		return nil, fmt.Errorf("resolving %s: %w", location, refError(err))
	}
	if refs != nil && refs.followed() {
		// Components of other documents become the document's own, so
		// that every schema is reached by a name inside it.
		doc.InternalizeRefs(ctx, nil)
	}
	if doc.Paths == nil || doc.Paths.Len() == 0 {
		return nil, fmt.Errorf("parsing %s: the document has no paths, so no operation to call", location)
	}
	return doc, nil
}

// topScalar is the scalar value of key in a mapping node, nil when absent.
func topScalar(m *yaml4.Node, key string) *yaml4.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key && m.Content[i+1].Kind == yaml4.ScalarNode && m.Content[i+1].Tag != "!!null" {
			return m.Content[i+1]
		}
	}
	return nil
}

// refError words the loader's message on a reference it could not follow.
func refError(err error) error {
	msg := err.Error()
	if strings.Contains(msg, "encountered disallowed external reference") {
		return fmt.Errorf("%w (a document given as bytes may refer only inside itself)", err)
	}
	return err
}

// decode reads JSON or YAML (with a line and column on a syntax error),
// keys as strings.
func decode(data []byte) (any, error) {
	t := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		var v any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			var se *json.SyntaxError
			var ue *json.UnmarshalTypeError
			switch {
			case errors.As(err, &se):
				line, col := lineCol(data, se.Offset)
				return nil, fmt.Errorf("invalid JSON at line %d, column %d: %w", line, col, err)
			case errors.As(err, &ue):
				line, col := lineCol(data, ue.Offset)
				return nil, fmt.Errorf("invalid JSON at line %d, column %d: %w", line, col, err)
			case errors.Is(err, io.ErrUnexpectedEOF):
				line, col := lineCol(data, int64(len(data)))
				return nil, fmt.Errorf("invalid JSON: it ends early, at line %d, column %d", line, col)
			}
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
		if dec.More() {
			line, col := lineCol(data, dec.InputOffset())
			return nil, fmt.Errorf("invalid JSON at line %d, column %d: more after the document", line, col)
		}
		return v, nil
	}
	var n yaml4.Node
	if err := yaml4.Unmarshal(data, &n); err != nil {
		return nil, yamlError(err)
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, yamlError(err)
	}
	return stringKeys(v), nil
}

// yamlError says where a YAML document is wrong: the line and column of
// the fault (not of the mapping that holds it), and what the parser was
// reading there.
func yamlError(err error) error {
	var le *yaml4.LoadError
	if !errors.As(err, &le) || le.Mark.Line == 0 {
		return fmt.Errorf("invalid YAML: %w", err)
	}
	msg := fmt.Sprintf("invalid YAML at line %d, column %d: %s", le.Mark.Line, le.Mark.Column, le.Message)
	if c := le.ContextMark; le.ContextMsg != "" && c.Line > 0 {
		msg += fmt.Sprintf(" (%s from line %d, column %d)", le.ContextMsg, c.Line, c.Column)
	}
	return errors.New(msg)
}

// stringKeys turns YAML's non-string keys (200: in responses) into strings.
func stringKeys(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = stringKeys(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = stringKeys(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = stringKeys(e)
		}
	}
	return v
}

func lineCol(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	line, col = 1, 1
	for _, c := range data[:off] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// ServerURL is the document's first server as an absolute URL: a relative
// one is resolved against the document's URL, variables take their
// defaults. override, when set, is used instead (a person's --server).
func ServerURL(doc *openapi3.T, location, override string) (*url.URL, error) {
	raw := override
	if raw == "" {
		if len(doc.Servers) == 0 || doc.Servers[0] == nil || doc.Servers[0].URL == "" {
			raw = "/"
		} else {
			s := doc.Servers[0]
			raw = s.URL
			for name, v := range s.Variables {
				if v != nil {
					raw = strings.ReplaceAll(raw, "{"+name+"}", v.Default)
				}
			}
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("reading the server URL %q: %w", raw, err)
	}
	if !u.IsAbs() {
		base, err := url.Parse(location)
		if err != nil || !base.IsAbs() || (base.Scheme != "http" && base.Scheme != "https") {
			return nil, fmt.Errorf("the document names no absolute server URL (%q) and was not read from one: give the API's base URL with --server", raw)
		}
		u = base.ResolveReference(u)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("the server URL %q is not an http(s) URL", u.String())
	}
	if strings.Contains(u.Host, "{") {
		return nil, fmt.Errorf("the server URL %q has a variable with no default: give the API's base URL with --server", u.String())
	}
	u.RawQuery, u.Fragment = "", ""
	u.Path = strings.TrimRight(u.Path, "/")
	return u, nil
}
