package postgres_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
)

// commitDropper is a TCP proxy in front of PostgreSQL that, when armed,
// swallows the server's reply to one COMMIT and breaks that connection: the
// transaction committed, but the client cannot know it from the reply.
type commitDropper struct {
	ln      net.Listener
	target  string
	armed   atomic.Bool
	dropped atomic.Int32
}

// newCommitDropper starts a proxy to the test database and returns it with
// a URL that leads through it.
func newCommitDropper(t *testing.T) (*commitDropper, string) {
	t.Helper()
	u, err := url.Parse(pgtest.URL(t))
	if err != nil || u.Host == "" {
		t.Skipf("the test database must be given as a postgres:// URL with a host to proxy it: %v", err)
	}
	if u.Query().Get("sslmode") != "disable" {
		t.Skip("the proxy reads the protocol, so the test database URL must have sslmode=disable")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &commitDropper{ln: ln, target: u.Host}
	t.Cleanup(func() { _ = ln.Close() })
	go p.serve()
	u.Host = ln.Addr().String()
	return p, u.String()
}

func (p *commitDropper) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.pipe(c)
	}
}

// pipe copies the client's bytes as they come and the server's message by
// message, so it can recognize CommandComplete "COMMIT".
func (p *commitDropper) pipe(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	go func() { _, _ = io.Copy(server, client) }()
	r := bufio.NewReader(server)
	for {
		var hdr [5]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return
		}
		body := make([]byte, binary.BigEndian.Uint32(hdr[1:])-4)
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		if hdr[0] == 'C' && bytes.HasPrefix(body, []byte("COMMIT\x00")) && p.armed.CompareAndSwap(true, false) {
			p.dropped.Add(1)
			return
		}
		if _, err := client.Write(append(hdr[:], body...)); err != nil {
			return
		}
	}
}

// When the reply to COMMIT is lost, the driver asks the server what became
// of the transaction: it committed, so the caller gets success, and the
// work is not done twice.
func TestLostCommitReplyIsResolved(t *testing.T) {
	t.Parallel()
	proxy, url := newCommitDropper(t)
	ctx := context.Background()
	d, err := postgres.Open(ctx, url, postgres.Options{Schema: pgtest.NewSchema(t), Logger: pgtest.Logger})
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(d, store.Options{})
	defer s.Close()

	proxy.armed.Store(true)
	res, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: specs(3, "q")})
	if err != nil {
		t.Fatalf("enqueue whose COMMIT reply was lost: %v; want success, since it committed", err)
	}
	if proxy.dropped.Load() != 1 {
		t.Fatalf("the proxy dropped %d COMMIT replies, want 1", proxy.dropped.Load())
	}
	jobs, err := s.JobList(ctx, &store.JobListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 3 || jobs[0].ID != min(res[0].Job.ID, res[1].Job.ID, res[2].Job.ID) {
		t.Fatalf("%d jobs in the store, want the 3 enqueued once", len(jobs))
	}
	verifyClean(t, s)
}
