package index

import (
	"sync"

	"github.com/kljensen/snowball/english"
)

// analyzer turns text into terms: words split at every non-alphanumeric
// byte, at camelCase humps ("getIssueComments", "APIPost") and between
// letters and digits, lower-cased, English stop words dropped, and stemmed
// with the Snowball English stemmer. It caches each word's term.
type analyzer struct {
	camel, stem, stop bool
	shared            bool // set once the index is built: lock the cache from then on
	mu                sync.Mutex
	cache             map[string]string // lower-case word → term ("" for a stop word)
}

// maxCache bounds the words queries may add to the cache.
const maxCache = 1 << 16

func newAnalyzer(camel, stem, stop bool) *analyzer {
	return &analyzer{camel: camel, stem: stem, stop: stop, cache: map[string]string{}}
}

func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// each calls fn with every term of s, in order.
func (a *analyzer) each(s string, buf []byte, fn func(term string)) []byte {
	return splitWords(s, buf, a.camel, func(w []byte) {
		if t := a.term(w); t != "" {
			fn(t)
		}
	})
}

// splitWords calls fn with each word of s, lower-cased in buf: s split at
// every non-alphanumeric byte and, when camel is set, at camelCase humps
// ("getIssueComments", "APIPost") and between letters and digits.
func splitWords(s string, buf []byte, camel bool, fn func(word []byte)) []byte {
	i := 0
	for i < len(s) {
		for i < len(s) && !(isLower(s[i]) || isUpper(s[i]) || isDigit(s[i])) {
			i++
		}
		start := i
		for i < len(s) {
			c := s[i]
			if !(isLower(c) || isUpper(c) || isDigit(c)) {
				break
			}
			if i > start && camel {
				p := s[i-1]
				if isUpper(c) && isLower(p) || // getIssue
					isUpper(c) && isUpper(p) && i+1 < len(s) && isLower(s[i+1]) || // APIPost
					isDigit(c) != isDigit(p) { // oauth2, v2api
					break
				}
			}
			i++
		}
		if i == start {
			continue
		}
		buf = buf[:0]
		for j := start; j < i; j++ {
			c := s[j]
			if isUpper(c) {
				c += 'a' - 'A'
			}
			buf = append(buf, c)
		}
		fn(buf)
	}
	return buf
}

// term maps one lower-case word to its term, "" to drop it.
func (a *analyzer) term(w []byte) string {
	if a.shared {
		a.mu.Lock()
		defer a.mu.Unlock()
	}
	if t, ok := a.cache[string(w)]; ok {
		return t
	}
	word := string(w)
	t := word
	switch {
	case a.stop && stopwords[word]:
		t = ""
	case a.stem && len(word) > 2 && !isDigit(word[0]):
		t = english.Stem(word, false)
	}
	if !a.shared || len(a.cache) < maxCache {
		a.cache[word] = t
	}
	return t
}

// stopwords are English function words, plus words that appear in nearly
// every tool description and so only add noise ("tool", "use").
var stopwords = map[string]bool{}

func init() {
	for _, w := range []string{
		"a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "do", "does",
		"for", "from", "had", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its",
		"my", "of", "on", "or", "our", "should", "so", "some", "such", "than", "that", "the", "their",
		"them", "then", "there", "these", "they", "this", "those", "to", "too", "was", "we", "were",
		"what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would",
		"you", "your", "s", "t", "e", "g", "eg", "ie", "etc", "via", "want", "need", "please", "tool",
		"any", "all", "about",
	} {
		stopwords[w] = true
	}
}
