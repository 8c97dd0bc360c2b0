package index

import (
	"encoding/json"
)

// eachParam calls fn with the name and description of every property of an
// input schema, nested objects and array items included (three levels). It
// scans the JSON without decoding it, which keeps building 10,000 tools
// fast; anything it does not understand ends the scan quietly.
func eachParam(schema []byte, fn func(name, desc string)) {
	p := &pscan{s: schema, fn: fn}
	p.schema(0)
}

type pscan struct {
	s  []byte
	i  int
	fn func(name, desc string)
}

const maxParamDepth = 3

func (p *pscan) ws() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *pscan) peek(c byte) bool {
	p.ws()
	return p.i < len(p.s) && p.s[p.i] == c
}

// members walks an object's members, calling member with each raw key (the
// value follows); false when the JSON is not as expected.
func (p *pscan) members(member func(key []byte) bool) bool {
	if !p.peek('{') {
		return false
	}
	p.i++
	if p.peek('}') {
		p.i++
		return true
	}
	for {
		p.ws()
		key, ok := p.rawString()
		if !ok || !p.peek(':') {
			return false
		}
		p.i++
		if !member(key) {
			return false
		}
		if p.peek(',') {
			p.i++
			continue
		}
		if p.peek('}') {
			p.i++
			return true
		}
		return false
	}
}

// schema walks one schema and returns its description.
func (p *pscan) schema(depth int) (desc string, ok bool) {
	if !p.peek('{') {
		return "", p.skip(0)
	}
	ok = p.members(func(key []byte) bool {
		switch string(key) {
		case `"properties"`:
			if depth < maxParamDepth {
				return p.properties(depth)
			}
		case `"items"`:
			if depth < maxParamDepth {
				_, ok := p.schema(depth + 1)
				return ok
			}
		case `"description"`:
			if p.peek('"') {
				raw, ok := p.rawString()
				desc = unquote(raw)
				return ok
			}
		}
		return p.skip(0)
	})
	return desc, ok
}

func (p *pscan) properties(depth int) bool {
	if !p.peek('{') {
		return p.skip(0)
	}
	return p.members(func(key []byte) bool {
		desc, ok := p.schema(depth + 1)
		p.fn(unquote(key), desc)
		return ok
	})
}

// rawString returns a string token with its quotes.
func (p *pscan) rawString() ([]byte, bool) {
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return nil, false
	}
	start := p.i
	for p.i++; p.i < len(p.s); p.i++ {
		switch p.s[p.i] {
		case '\\':
			p.i++
		case '"':
			p.i++
			return p.s[start:p.i], true
		}
	}
	return nil, false
}

func unquote(raw []byte) string {
	for _, c := range raw {
		if c == '\\' {
			var s string
			json.Unmarshal(raw, &s)
			return s
		}
	}
	return string(raw[1 : len(raw)-1])
}

// skip passes over one value.
func (p *pscan) skip(depth int) bool {
	if depth > 100 {
		return false
	}
	p.ws()
	if p.i >= len(p.s) {
		return false
	}
	switch p.s[p.i] {
	case '"':
		_, ok := p.rawString()
		return ok
	case '{':
		return p.members(func([]byte) bool { return p.skip(depth + 1) })
	case '[':
		p.i++
		if p.peek(']') {
			p.i++
			return true
		}
		for {
			if !p.skip(depth + 1) {
				return false
			}
			if p.peek(',') {
				p.i++
				continue
			}
			if p.peek(']') {
				p.i++
				return true
			}
			return false
		}
	}
	start := p.i
	for p.i < len(p.s) && p.s[p.i] != ',' && p.s[p.i] != '}' && p.s[p.i] != ']' && p.s[p.i] != ' ' && p.s[p.i] != '\n' && p.s[p.i] != '\t' && p.s[p.i] != '\r' {
		p.i++
	}
	return p.i > start
}
