package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-json-experiment/json/jsontext"
	"go.yaml.in/yaml/v4"
)

// decodeV3 decodes an OpenAPI 3 document into kin-openapi's types: root is
// its JSON read by jsonToNode, js the JSON itself.
//
// It goes through kin-openapi's own YAML decoding (an UnmarshalYAML on each
// type, one pass over a node tree) rather than its JSON decoding, whose
// UnmarshalJSON methods each check and decode their whole subtree again and
// decode every schema a second time for its extensions: GitHub's REST
// description took 2 s that way. Here the JSON is read once into yaml.Node
// values, each scalar tagged with its JSON type so that nothing is resolved
// again as YAML would (a string stays a string whatever it looks like), and
// the two large maps, paths and components.schemas, are decoded in chunks on
// every core. The result is the document kin-openapi's JSON decoding gives
// (TestDecodeV3MatchesKinOpenAPI, FuzzDecodeV3), but for one thing: a key
// written in another case than the specification's (seCUritY) is an
// extension here, as OpenAPI's case-sensitive keys say, where encoding/json
// matched it to the field. A document this path refuses (duplicate
// keys, which YAML refuses and JSON resolves to the last) goes through
// kin-openapi's JSON decoding, as before.
func decodeV3(root *yaml.Node, js []byte) (*openapi3.T, error) {
	doc, err := decodeV3Nodes(root)
	if err == nil {
		return doc, nil
	}
	doc = &openapi3.T{}
	if err := json.Unmarshal(js, doc); err != nil {
		return nil, err
	}
	return doc, nil
}

func decodeV3Nodes(root *yaml.Node) (*openapi3.T, error) {
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("the document is not an object")
	}
	// The top level without paths and components.schemas, which are
	// decoded apart in chunks.
	rest := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	var paths, schemas *yaml.Node
	var compRest *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch {
		case k.Value == "paths" && v.Kind == yaml.MappingNode && paths == nil:
			paths = v
			continue
		case k.Value == "components" && v.Kind == yaml.MappingNode && compRest == nil:
			compRest = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			for j := 0; j+1 < len(v.Content); j += 2 {
				ck, cv := v.Content[j], v.Content[j+1]
				if ck.Value == "schemas" && cv.Kind == yaml.MappingNode && schemas == nil {
					schemas = cv
					continue
				}
				compRest.Content = append(compRest.Content, ck, cv)
			}
			continue
		}
		rest.Content = append(rest.Content, k, v)
	}

	doc := &openapi3.T{}
	var comps openapi3.Components
	type unit struct {
		run func() error
	}
	var units []unit
	units = append(units, unit{func() error { return rest.Decode(doc) }})
	if compRest != nil {
		units = append(units, unit{func() error { return compRest.Decode(&comps) }})
	}
	workers := runtime.GOMAXPROCS(0)
	pathChunks := chunks(paths, 2*workers)
	pathParts := make([]openapi3.Paths, len(pathChunks))
	for i, c := range pathChunks {
		units = append(units, unit{func() error { return c.Decode(&pathParts[i]) }})
	}
	schemaChunks := chunks(schemas, 2*workers)
	schemaParts := make([]openapi3.Schemas, len(schemaChunks))
	for i, c := range schemaChunks {
		units = append(units, unit{func() error { return c.Decode(&schemaParts[i]) }})
	}

	errs := make([]error, len(units))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(units)) {
		wg.Go(func() {
			for i := range next {
				errs[i] = units[i].run()
			}
		})
	}
	for i := range units {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}

	if compRest != nil {
		doc.Components = &comps
	}
	if schemas != nil {
		if doc.Components == nil {
			doc.Components = &openapi3.Components{}
		}
		doc.Components.Schemas = make(openapi3.Schemas, len(schemas.Content)/2)
		for _, part := range schemaParts {
			for k, v := range part {
				doc.Components.Schemas[k] = v
			}
		}
	}
	if paths != nil {
		doc.Paths = openapi3.NewPaths()
		ext := map[string]any{}
		for i := range pathParts {
			for k, v := range pathParts[i].Map() {
				doc.Paths.Set(k, v)
			}
			for k, v := range pathParts[i].Extensions {
				ext[k] = v
			}
		}
		if len(ext) > 0 {
			doc.Paths.Extensions = ext
		}
	}
	return doc, nil
}

// chunks splits a mapping node into at most n mappings of about the same
// number of entries (none for nil).
func chunks(m *yaml.Node, n int) []*yaml.Node {
	if m == nil {
		return nil
	}
	pairs := len(m.Content) / 2
	if pairs == 0 {
		return []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}
	}
	n = min(n, pairs)
	out := make([]*yaml.Node, 0, n)
	for i := range n {
		from, to := i*pairs/n, (i+1)*pairs/n
		out = append(out, &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: m.Content[2*from : 2*to]})
	}
	return out
}

// jsonToNode reads valid JSON into a yaml.Node tree, every scalar tagged
// with its JSON type. It reads with jsontext (the tokenizer of encoding/json
// v2), three times as fast as encoding/json's Decoder.Token, and as
// lenient as encoding/json: duplicate names are kept (the YAML decoding
// then refuses them, and kin-openapi's JSON decoding reads the document)
// and invalid UTF-8 becomes U+FFFD.
func jsonToNode(js []byte) (*yaml.Node, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(js), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	// The first block holds as many nodes as the document can (a value
	// and its separator take two bytes at least): a small document does
	// not allocate and clear a block of 4,096 nodes.
	b := &nodes{block: make([]yaml.Node, 0, min(4096, len(js)/2+1))}
	n, err := b.value(dec)
	if err != nil {
		return nil, fmt.Errorf("reading the JSON: %w", err)
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, fmt.Errorf("reading the JSON: more after the document")
	}
	return n, nil
}

// nodes allocates yaml.Node values in blocks (a large document has
// millions).
type nodes struct{ block []yaml.Node }

func (b *nodes) node(kind yaml.Kind, tag, value string) *yaml.Node {
	if len(b.block) == cap(b.block) {
		b.block = make([]yaml.Node, 0, 4096)
	}
	b.block = append(b.block, yaml.Node{Kind: kind, Tag: tag, Value: value})
	return &b.block[len(b.block)-1]
}

func (b *nodes) value(dec *jsontext.Decoder) (*yaml.Node, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch k := tok.Kind(); k {
	case '{', '[':
		var n *yaml.Node
		end := jsontext.Kind('}')
		if k == '{' {
			n = b.node(yaml.MappingNode, "!!map", "")
		} else {
			n = b.node(yaml.SequenceNode, "!!seq", "")
			end = ']'
		}
		for dec.PeekKind() != end {
			if k == '{' {
				name, err := dec.ReadToken()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, b.node(yaml.ScalarNode, "!!str", name.String()))
			}
			e, err := b.value(dec)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, e)
		}
		if _, err := dec.ReadToken(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case '"':
		return b.node(yaml.ScalarNode, "!!str", tok.String()), nil
	case '0':
		// YAML reads -0 as a float, and an integer beyond int64 as
		// nothing: both are floats, as encoding/json reads them into an any.
		v := tok.String()
		tag := "!!int"
		if _, err := strconv.ParseInt(v, 10, 64); err != nil || v == "-0" {
			tag = "!!float"
		}
		return b.node(yaml.ScalarNode, tag, v), nil
	case 't', 'f':
		return b.node(yaml.ScalarNode, "!!bool", tok.String()), nil
	case 'n':
		return b.node(yaml.ScalarNode, "!!null", "null"), nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}
