package server

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
)

// Defaults of [Guard].
const (
	// DefaultMaxRequestBytes is what one request body may hold: the largest
	// batch the API takes (16 payloads of the default 1 MiB and their
	// envelope).
	DefaultMaxRequestBytes = 16*DefaultMaxJSONBytes + 1<<20
	// DefaultBodyTimeout is how long a request body may take to arrive.
	DefaultBodyTimeout = 30 * time.Second
)

// Guard bounds what one request may cost before any handler of next runs:
// a body larger than maxBytes fails to read (413 from the handler), and a
// body that takes longer than bodyTimeout to arrive fails to read, so a
// client that drips its body a byte at a time holds a connection for
// bodyTimeout at most. Only the body is timed, never the handler or the
// answer, so long polls and notice streams are unaffected; streaming
// protocols (gRPC, Connect streams), whose body is read as messages
// arrive, are bounded in size only. Zero arguments take the defaults.
func Guard(next http.Handler, maxBytes int64, bodyTimeout time.Duration) http.Handler {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxRequestBytes
	}
	if bodyTimeout <= 0 {
		bodyTimeout = DefaultBodyTimeout
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBytes)
		if !streaming(r.Header.Get("Content-Type")) {
			rc := http.NewResponseController(w)
			if err := rc.SetReadDeadline(time.Now().Add(bodyTimeout)); err == nil {
				r.Body = &timedBody{ReadCloser: r.Body, rc: rc}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// streaming reports whether ctype is a protocol whose body is a stream
// of messages (gRPC, gRPC-Web, Connect streaming).
func streaming(ctype string) bool {
	return strings.HasPrefix(ctype, "application/grpc") || strings.HasPrefix(ctype, "application/connect+")
}

// timedBody lifts the read deadline once the body is read to its end or
// closed, so the handler's own time (a long poll) is never cut short.
type timedBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		b.lift()
	}
	return n, err
}

func (b *timedBody) Close() error {
	b.lift()
	return b.ReadCloser.Close()
}

func (b *timedBody) lift() {
	if !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
}
