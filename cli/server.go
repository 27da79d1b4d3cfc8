package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/maintenance"
	"github.com/stint-dev/stint/outbox"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/server/remote"
	"github.com/stint-dev/stint/store"
)

type serverOptions struct {
	listen       string
	admission    string // --admission: a JSON file of rules
	tlsCert      string
	tlsKey       string
	clientCA     string
	noAuth       bool
	insecure     bool
	maxJSONBytes int
	bus          busOptions
}

func (a *app) serverCmd() *cobra.Command {
	o := serverOptions{listen: "127.0.0.1:7777", maxJSONBytes: server.DefaultMaxJSONBytes}
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Serve the stint API to remote workers and clients, and run the maintenance services",
		Long: "server serves the jobs, worker and admin APIs (gRPC, gRPC-Web, Connect, and plain JSON\n" +
			"over HTTP POST) on --listen, and runs the maintenance services (scheduler, reaper,\n" +
			"timeouts, cancel finalizer, retention). Several servers on one PostgreSQL database\n" +
			"act as one cluster: any of them serves any worker, and one leads the maintenance.\n\n" +
			"Every request needs a bearer token (`stint tokens create`). --no-auth serves without\n" +
			"one (every caller is an admin of the default tenant), which is refused on a\n" +
			"non-loopback address unless --insecure is given as well.",
		Example: `  stint server --db ./stint.db
  stint server --listen 0.0.0.0:7777 --database-url postgres://stint@db/stint --tls-cert cert.pem --tls-key key.pem`,
		Args: cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			return a.runServer(cmd.Context(), cmd.OutOrStdout(), o)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.admission, "admission", "", "JSON file of admission rules applied at every enqueue (see docs/flow.md)")
	f.StringVar(&o.listen, "listen", o.listen, "address to serve the API on, host:port")
	f.StringVar(&o.tlsCert, "tls-cert", "", "TLS certificate file (PEM); with --tls-key, serves HTTPS")
	f.StringVar(&o.tlsKey, "tls-key", "", "TLS private key file (PEM)")
	f.StringVar(&o.clientCA, "client-ca", "", "CA file (PEM): require client certificates signed by it (mutual TLS)")
	f.BoolVar(&o.noAuth, "no-auth", false, "serve without tokens: every caller is an admin of the default tenant")
	f.BoolVar(&o.insecure, "insecure", false, "allow --no-auth on a non-loopback address")
	o.bus.register(f)
	f.Var(intFlag{p: &o.maxJSONBytes, min: 1, max: lifecycle.MaxPayloadBytes}, "max-payload-bytes", "largest payload, result, checkpoint or progress accepted, in bytes (at most the store's own limit, 1 MiB)")
	return cmd
}

// isLoopback reports whether a listen address only accepts local connections.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// tlsConfig builds the server's TLS settings from the flags; nil for plain HTTP.
func (o serverOptions) tlsConfig() (*tls.Config, error) {
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return nil, usageErrorf("--tls-cert and --tls-key go together: give both, or neither for plain HTTP")
	}
	if o.tlsCert == "" {
		if o.clientCA != "" {
			return nil, usageErrorf("--client-ca needs TLS: give --tls-cert and --tls-key too")
		}
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
	if err != nil {
		return nil, usageErrorf("--tls-cert/--tls-key: %v", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if o.clientCA != "" {
		pem, err := os.ReadFile(o.clientCA)
		if err != nil {
			return nil, usageErrorf("--client-ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, usageErrorf("--client-ca %s holds no PEM certificate", o.clientCA)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

func (a *app) runServer(ctx context.Context, out io.Writer, o serverOptions) (err error) {
	if o.noAuth && !isLoopback(o.listen) && !o.insecure {
		return usageErrorf("--listen %s is not a loopback address: refusing to serve without authentication; drop --no-auth and use tokens (`stint tokens create`), or add --insecure", o.listen)
	}
	tlsCfg, err := o.tlsConfig()
	if err != nil {
		return err
	}
	if err := a.loadAdmission(o.admission); err != nil {
		return err
	}
	st, err := a.openStore(ctx, mayCreate)
	if err != nil {
		return err
	}
	defer closeStore(st, &err)
	logger := slog.New(slog.NewTextHandler(a.env.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	mopts, err := a.metricsOptions()
	if err != nil {
		return err
	}
	if st, err = observe(ctx, st, a.env.Clock, logger, 5*time.Second, mopts...); err != nil { // metrics, /stats and the dashboard (obs)
		return err
	}
	m, err := maintenance.New(st, &maintenance.Config{Logger: logger, Clock: a.env.Clock})
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	if err := m.Start(runCtx); err != nil {
		return err
	}
	defer m.Stop()
	stopBus, err := a.startBus(runCtx, out, st, &o.bus, logger)
	if err != nil {
		return err
	}
	defer stopBus()
	// The outbox deliverer runs on every server: deliverers claim rows with
	// SKIP LOCKED (PostgreSQL), so several servers share the work safely.
	d, err := outbox.New(st, &outbox.Config{Logger: logger, Clock: a.env.Clock, Client: o.bus.client})
	if err != nil {
		return err
	}
	if err := d.Start(runCtx); err != nil {
		return err
	}
	defer d.Stop()
	api, err := serveAPI(st, server.Config{NoAuth: o.noAuth, MaxJSONBytes: o.maxJSONBytes, Logger: logger}, o.listen, tlsCfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "stint server listening on %s\n", api.url)
	select {
	case <-ctx.Done():
	case err := <-api.failed:
		return err
	}
	fmt.Fprintf(out, "stint server stopping\n")
	return api.stop()
}

// runningAPI is an API server started by serveAPI.
type runningAPI struct {
	url    string
	failed <-chan error
	stop   func() error
}

// serveAPI serves the API on st at addr until stop, which ends long polls at
// once and waits up to 10s for other requests. Without TLS it speaks HTTP/1.1
// and HTTP/2 in clear text (h2c), so gRPC clients work too.
func serveAPI(st store.Store, cfg server.Config, addr string, tlsCfg *tls.Config) (*runningAPI, error) {
	cfg.Store = st
	h, err := server.New(cfg)
	if err != nil {
		return nil, err
	}
	if o := observabilityOf(st); o != nil { // /metrics, /stats and the dashboard beside the API
		h = o.mount(h, st, cfg.NoAuth)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w; choose another address with --listen", addr, err)
	}
	base, cancel := context.WithCancel(context.Background())
	// Every request's size and body time are bounded (server.Guard); idle
	// keep-alive connections are closed after two minutes.
	srv := &http.Server{Handler: server.Guard(h, 0, 0), BaseContext: func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, TLSConfig: tlsCfg}
	if cfg.Logger != nil { // refused handshakes and the like, in the server's log
		srv.ErrorLog = slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn)
	}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetHTTP2(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	scheme, serve := "http", func() error { return srv.Serve(ln) }
	if tlsCfg != nil {
		// ServeTLS adds HTTP/2 to the ALPN protocols of TLSConfig.
		scheme, serve = "https", func() error { return srv.ServeTLS(ln, "", "") }
	}
	failed := make(chan error, 1)
	go func() {
		if err := serve(); !errors.Is(err, http.ErrServerClosed) {
			failed <- err
		}
	}()
	return &runningAPI{url: scheme + "://" + ln.Addr().String(), failed: failed, stop: func() error {
		cancel() // long polls return now rather than at their wait's end
		ctx, done := context.WithTimeout(context.Background(), 10*time.Second)
		defer done()
		return srv.Shutdown(ctx)
	}}, nil
}

// startDevAPI serves the API for stint dev on a loopback address with a
// fresh admin token of the default tenant (revoked again at stop), and
// prints both. A busy address falls back to a free port.
func (a *app) startDevAPI(ctx context.Context, out io.Writer, st store.Store, addr string) (stop func(), err error) {
	if !isLoopback(addr) {
		return nil, usageErrorf("--api %s: stint dev serves its API on a loopback address only (127.0.0.1:PORT); use `stint server` for others", addr)
	}
	keeper, err := store.TokensOf(st)
	if err != nil {
		return nil, err
	}
	tok, secret, err := server.NewToken(server.DefaultTenant, store.RoleAdmin, "stint-dev")
	if err != nil {
		return nil, err
	}
	if tok, err = keeper.TokenCreate(ctx, tok); err != nil {
		return nil, err
	}
	cfg := server.Config{Logger: slog.New(slog.NewTextHandler(a.env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	api, err := serveAPI(st, cfg, addr, nil)
	if err != nil {
		host, _, _ := net.SplitHostPort(addr)
		if api, err = serveAPI(st, cfg, net.JoinHostPort(host, "0"), nil); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(out, "API on %s, dev token (admin, tenant default): %s\n", api.url, secret)
	fmt.Fprintf(out, "Dashboard: %s/dashboard/#token=%s\n", api.url, secret)
	fmt.Fprintf(out, "  curl -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' \\\n    -d '{\"job\":{\"kind\":\"demo.sleep\",\"payload\":{\"ms\":500}}}' %s/stint.v1.JobService/Enqueue\n\n", secret, api.url)
	return func() {
		_ = api.stop()
		_, _ = keeper.TokenRevoke(context.WithoutCancel(ctx), "", tok.ID)
	}, nil
}

// benchViaAPI serves st on a loopback API server with a fresh admin token of
// the default tenant, and returns a store over that server for stint bench
// --via-api: what the bench measures then includes the network and the API.
func (a *app) benchViaAPI(ctx context.Context, st store.Store, where string) (store.Store, string, func(), error) {
	keeper, err := store.TokensOf(st)
	if err != nil {
		return nil, "", nil, err
	}
	tok, secret, err := server.NewToken(server.DefaultTenant, store.RoleAdmin, "stint-bench")
	if err != nil {
		return nil, "", nil, err
	}
	if _, err := keeper.TokenCreate(ctx, tok); err != nil {
		return nil, "", nil, err
	}
	api, err := serveAPI(st, server.Config{Logger: slog.New(slog.NewTextHandler(a.env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}, "127.0.0.1:0", nil)
	if err != nil {
		return nil, "", nil, err
	}
	rs, err := remote.New(remote.Options{URL: api.url, Token: secret})
	if err != nil {
		_ = api.stop()
		return nil, "", nil, err
	}
	return benchStore{Store: rs, db: st}, where + " through the API at " + api.url, func() { rs.Close(); _ = api.stop() }, nil
}

// benchStore is the remote store of bench --via-api, except that the
// bench's final check verifies the database itself: Verify is not offered
// over the API.
type benchStore struct {
	store.Store
	db store.Store
}

func (b benchStore) Verify(ctx context.Context, p *store.VerifyParams) (store.VerifyReport, error) {
	return b.db.Verify(ctx, p)
}
