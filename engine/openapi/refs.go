package openapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
)

// MaxReferencedDocuments bounds how many other documents one document may
// refer to.
const MaxReferencedDocuments = 100

// RefReader reads the other documents a document refers to ($ref to
// ./schemas/pet.json or https://api.example.com/other.yaml#/Pet), within
// the document's own reach: for a document read from a URL, only URLs of
// the same origin (scheme, host and port), through a client that stays on
// it (I4: the hub fetches only from the document's origin); for a file,
// only files in the document's folder or below it (through os.Root, so a
// symbolic link cannot lead out either). What a referenced document holds
// becomes tool descriptions the model reads, so a document must not be able
// to pull in any file of the person's machine or any other host's answer.
// Together the documents may hold MaxDocumentBytes, and there may be
// MaxReferencedDocuments of them.
type RefReader struct {
	ctx    context.Context
	client *http.Client
	origin string // of a URL document
	dir    string // of a file document, absolute
	where  string // the document's location, for messages

	mu    sync.Mutex
	n     int
	total int64
}

// NewRefReader makes the RefReader of the document at location (a URL or
// a file path).
func NewRefReader(ctx context.Context, location string) (*RefReader, error) {
	return newRefReader(ctx, location, http.DefaultTransport)
}

// newRefReader is NewRefReader making its requests over rt.
func newRefReader(ctx context.Context, location string, rt http.RoundTripper) (*RefReader, error) {
	r := &RefReader{ctx: ctx, where: location}
	if strings.Contains(location, "://") {
		u, err := url.Parse(location)
		if err != nil {
			return nil, fmt.Errorf("parsing the document URL: %w", err)
		}
		// Its own client, whatever reads the document: a redirect away
		// from the origin is refused before anything is sent.
		r.origin, r.client = origin(u), GuardedClientOver(u, rt)
		return r, nil
	}
	abs, err := filepath.Abs(location)
	if err != nil {
		return nil, fmt.Errorf("finding the document's folder: %w", err)
	}
	r.dir = filepath.Dir(abs)
	return r, nil
}

// base is the location references are resolved against (nil for none).
func (r *RefReader) base(location string) *url.URL {
	if r == nil {
		return nil
	}
	if r.origin != "" {
		u, _ := url.Parse(location)
		return u
	}
	abs, err := filepath.Abs(location)
	if err != nil {
		return nil
	}
	return &url.URL{Path: filepath.ToSlash(abs)}
}

// followed reports whether another document was read.
func (r *RefReader) followed() bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n > 0
}

// ErrRefRefused marks a reference outside the document's reach.
var ErrRefRefused = errors.New("reference refused")

// read is the loader's ReadFromURIFunc.
func (r *RefReader) read(_ *openapi3.Loader, u *url.URL) ([]byte, error) {
	if err := r.count(0); err != nil {
		return nil, err
	}
	var (
		b   []byte
		err error
	)
	switch {
	case r.origin != "":
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("refusing the reference to %s: a document read from %s refers only to URLs of that origin: %w", u.Redacted(), r.origin, ErrRefRefused)
		}
		if o := origin(u); o != r.origin {
			return nil, fmt.Errorf("refusing the reference to %s: the hub reads only from %s, the document's origin, and that is %s: %w", u.Redacted(), r.origin, o, ErrRefRefused)
		}
		cp := *u
		cp.Fragment = ""
		b, err = Read(r.ctx, r.client, cp.String())
	default:
		if u.Host != "" || (u.Scheme != "" && u.Scheme != "file") {
			return nil, fmt.Errorf("refusing the reference to %s: a document read from a file refers only to files in its folder (%s) or below: %w", u.Redacted(), r.dir, ErrRefRefused)
		}
		b, err = r.readFile(filepath.FromSlash(u.Path))
	}
	if err != nil {
		return nil, err
	}
	if err := r.count(int64(len(b))); err != nil {
		return nil, err
	}
	return b, nil
}

func (r *RefReader) count(n int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n == 0 {
		if r.n >= MaxReferencedDocuments {
			return fmt.Errorf("reading %s: it refers to more than %d other documents, the most the hub reads", r.where, MaxReferencedDocuments)
		}
		r.n++
		return nil
	}
	r.total += n
	if r.total > MaxDocumentBytes {
		return fmt.Errorf("reading %s: with the documents it refers to it is larger than %d MB, the most the hub reads", r.where, MaxDocumentBytes>>20)
	}
	return nil
}

// readFile reads a file in the document's folder or below.
func (r *RefReader) readFile(p string) ([]byte, error) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(r.dir, p)
	}
	rel, err := filepath.Rel(r.dir, filepath.Clean(p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("refusing the reference to %s: a document refers only to files in its folder (%s) or below: %w", p, r.dir, ErrRefRefused)
	}
	root, err := os.OpenRoot(r.dir)
	if err != nil {
		return nil, fmt.Errorf("reading the referenced document %s: %w", p, err)
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		if strings.Contains(err.Error(), "escapes from parent") {
			return nil, fmt.Errorf("refusing the reference to %s: it leads out of the document's folder (%s): %w", p, r.dir, ErrRefRefused)
		}
		return nil, fmt.Errorf("reading the referenced document: %w", err)
	}
	defer f.Close()
	return readCapped(io.Reader(f), p)
}
