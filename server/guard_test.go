package server_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/server"
)

// TestGuard: a body over the limit fails to read; a body that never
// finishes arriving is cut off at the body timeout (the connection is
// answered or closed, not held); a handler that outlives the body timeout
// after reading its body (a long poll) is not cut short.
func TestGuard(t *testing.T) {
	t.Parallel()
	bodyTimeout := 200 * time.Millisecond
	h := server.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "body: "+err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		if r.URL.Path == "/poll" {
			select { // wait as a long poll would, well past the body timeout
			case <-time.After(5 * bodyTimeout):
			case <-r.Context().Done():
				http.Error(w, "cancelled", http.StatusServiceUnavailable)
				return
			}
		}
		_, _ = w.Write(b)
	}), 1024, bodyTimeout)
	srv := httptest.NewServer(h)
	defer srv.Close()

	t.Run("too large", func(t *testing.T) {
		res, err := http.Post(srv.URL, "application/json", strings.NewReader(strings.Repeat("x", 1025)))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d, want 413", res.StatusCode)
		}
	})
	t.Run("at the limit", func(t *testing.T) {
		res, err := http.Post(srv.URL, "application/json", strings.NewReader(strings.Repeat("x", 1024)))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("status %d, want 200", res.StatusCode)
		}
	})
	t.Run("slow body", func(t *testing.T) {
		conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// Promise 100 bytes, send 1, then nothing.
		if _, err := io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\nx"); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(time.Minute)) // a guard against a hang, not a measure
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				t.Fatalf("a body that never arrived was answered 200")
			}
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("the server held the connection of a body that never arrived")
		}
	})
	t.Run("long poll after the body", func(t *testing.T) {
		res, err := http.Post(srv.URL+"/poll", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || string(b) != `{}` {
			t.Fatalf("status %d %q: the handler was cut short after its body was read", res.StatusCode, b)
		}
	})
}
