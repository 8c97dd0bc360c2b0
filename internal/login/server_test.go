package login

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"
)

// deviceServer is an RFC 8628 authorization server in the test process:
// discovery metadata (RFC 8414), a device authorization endpoint and a token
// endpoint that answers each poll with the next of its scripted answers
// (the last one repeats), and the refresh_token grant.
type deviceServer struct {
	*httptest.Server
	t *testing.T

	mu sync.Mutex
	// Scripted behaviour, set before the flow starts.
	answers   []answer // the token endpoint's answers to device_code polls
	refresh   []answer // its answers to refresh_token grants
	expiresIn int      // 0: none sent
	interval  int      // 0: none sent
	form      bool     // answer the token endpoint form-encoded, errors with 200 (GitHub)
	complete  bool     // send verification_uri_complete
	path      string   // the issuer's path
	// What it saw.
	deviceReqs []url.Values
	polls      []time.Time
	pollReqs   []url.Values
	refreshes  []url.Values
}

// answer is one answer of the token endpoint: an RFC 6749 error code, or
// a token.
type answer struct {
	err     string
	token   string
	refresh string
	expires int
}

const userCode = "WDJB-MJHT"

func newDeviceServer(t *testing.T, answers ...answer) *deviceServer {
	t.Helper()
	s := &deviceServer{t: t, answers: answers, expiresIn: 60, interval: 1}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		iss := s.URL + s.path
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server" + s.path:
			writeJSON(w, 200, map[string]any{"issuer": iss, "device_authorization_endpoint": s.URL + "/device", "token_endpoint": s.URL + "/token"})
		default:
			http.NotFound(w, r)
		}
	})
	mux.HandleFunc("POST /device", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		s.mu.Lock()
		s.deviceReqs = append(s.deviceReqs, r.PostForm)
		m := map[string]any{"device_code": "dc-1", "user_code": userCode, "verification_uri": s.URL + "/activate"}
		if s.complete {
			m["verification_uri_complete"] = s.URL + "/activate?user_code=" + userCode
		}
		if s.expiresIn > 0 {
			m["expires_in"] = s.expiresIn
		}
		if s.interval > 0 {
			m["interval"] = s.interval
		}
		s.mu.Unlock()
		writeJSON(w, 200, m)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		s.mu.Lock()
		var a answer
		switch r.PostForm.Get("grant_type") {
		case "urn:ietf:params:oauth:grant-type:device_code":
			s.polls = append(s.polls, time.Now())
			s.pollReqs = append(s.pollReqs, r.PostForm)
			a = next(s.answers, len(s.polls)-1)
		case "refresh_token":
			s.refreshes = append(s.refreshes, r.PostForm)
			a = next(s.refresh, len(s.refreshes)-1)
		default:
			a = answer{err: "unsupported_grant_type"}
		}
		form := s.form
		s.mu.Unlock()
		s.write(w, a, form)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func next(as []answer, i int) answer {
	if len(as) == 0 {
		return answer{err: "authorization_pending"}
	}
	return as[min(i, len(as)-1)]
}

func (s *deviceServer) write(w http.ResponseWriter, a answer, form bool) {
	if a.err == "http500" {
		http.Error(w, "upstream exploded", http.StatusInternalServerError)
		return
	}
	if a.err == "drop" {
		// The connection breaks before any answer.
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			s.t.Errorf("hijacking: %v", err)
			return
		}
		conn.Close()
		return
	}
	if a.err == "badjson" {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token": `)
		return
	}
	if form {
		v := url.Values{}
		if a.err != "" {
			v.Set("error", a.err)
		} else {
			v.Set("access_token", a.token)
			v.Set("token_type", "bearer")
			v.Set("scope", "repo")
		}
		w.Header().Set("Content-Type", "application/x-www-form-urlencoded")
		fmt.Fprint(w, v.Encode())
		return
	}
	if a.err != "" {
		writeJSON(w, 400, map[string]any{"error": a.err, "error_description": "scripted " + a.err})
		return
	}
	m := map[string]any{"access_token": a.token, "token_type": "Bearer"}
	if a.refresh != "" {
		m["refresh_token"] = a.refresh
	}
	if a.expires != 0 {
		m["expires_in"] = a.expires
	}
	writeJSON(w, 200, m)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// endpoints are the server's endpoints, as discovery finds them.
func (s *deviceServer) endpoints() Endpoints {
	return Endpoints{Issuer: s.URL + s.path, DeviceAuthURL: s.URL + "/device", TokenURL: s.URL + "/token"}
}

func (s *deviceServer) seen() (polls []time.Time, pollReqs, deviceReqs []url.Values) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.polls...), append([]url.Values(nil), s.pollReqs...), append([]url.Values(nil), s.deviceReqs...)
}
