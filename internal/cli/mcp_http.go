//go:build !rukh_oneshot

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/rukh-cli/rukh/internal/buildid"
	"github.com/rukh-cli/rukh/internal/core/profile"
	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/internal/mcp/mcphttp"
	"github.com/rukh-cli/rukh/internal/mcp/seam"
)

// Timeouts of the HTTP server: a client that is slow to send its headers
// or its body is dropped; a response may take as long as its call
// (every call has its task's finite deadline).
const (
	httpHeaderTimeout = 5 * time.Second
	httpBodyTimeout   = 30 * time.Second
	httpIdleTimeout   = 2 * time.Minute
)

// serveHTTP is `rukh mcp --http ADDR`: it refuses to start without the
// profile's mcp.http section, or on an address that is not loopback
// without TLS; it says where it listens, and serves until ctx ends.
func serveHTTP(ctx context.Context, f *Factory, h seam.ToolHost, logw io.Writer, addr, cert, key string, withTLS bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return &UsageError{fmt.Errorf("--http %q: %v; give host:port, e.g. 127.0.0.1:8931", addr, err)}
	}
	loopback := host == "localhost"
	if ip := net.ParseIP(host); ip != nil {
		loopback = ip.IsLoopback()
	}
	switch {
	case withTLS && (cert == "" || key == ""):
		return &UsageError{errors.New("--tls-cert and --tls-key go together")}
	case !loopback && !withTLS:
		return &UsageError{fmt.Errorf("--http %s is not a loopback address: serving tokens there needs TLS; give --tls-cert FILE --tls-key FILE", addr)}
	}
	logger := slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelWarn}))
	handler, err := mcphttp.New(ctx, mcphttp.Options{Host: h, Name: f.Name, Version: buildid.Version(), Logger: logger, Diagnostics: logw})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	ln = mcphttp.Listen(ln, !withTLS)
	srv := &http.Server{Handler: handler, BaseContext: func(net.Listener) context.Context { return ctx },
		ReadHeaderTimeout: httpHeaderTimeout, ReadTimeout: httpBodyTimeout,
		IdleTimeout: httpIdleTimeout, MaxHeaderBytes: mcphttp.MaxHeaderBytes, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	scheme := "http"
	if withTLS {
		scheme = "https"
	}
	// The warnings come before the line that says where it listens, so
	// that whoever waits for that line has them all.
	warnDeniedHTTP(ctx, f.Name, logw, h)
	fmt.Fprintf(logw, "%s mcp: serving %s://%s%s (protected resource metadata at %s://%s%s)\n", f.Name, scheme, ln.Addr(), mcphttp.Path, scheme, ln.Addr(), mcphttp.MetadataPaths[0])
	done := make(chan error, 1)
	go func() {
		if withTLS {
			done <- srv.ServeTLS(ln, cert, key)
		} else {
			done <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// Calls in flight are interrupted with the context of their
		// requests, and answered; then the server closes.
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shut)
		return ctx.Err()
	}
}

// warnDeniedHTTP warns on the log, for each task the mcp.http section binds
// callers to, of the tools that task denies every call of (as `rukh mcp`
// on stdio does for its one task). It says nothing when it cannot tell:
// the handler has read the section already and refuses what it must.
func warnDeniedHTTP(ctx context.Context, name string, logw io.Writer, h seam.ToolHost) {
	sec, err := h.HTTPSection(ctx)
	if err != nil || len(sec.Section) == 0 {
		return
	}
	var ph profile.HTTP
	if json.Unmarshal(sec.Section, &ph) != nil {
		return
	}
	seen := map[string]bool{}
	for _, b := range ph.Bindings {
		if seen[b.Task] {
			continue
		}
		seen[b.Task] = true
		if page, err := h.ListTools(ctx, &wire.ListTools{Task: b.Task, Denied: true}); err == nil {
			warnDenied(logw, name, b.Task, page.Denied)
		}
	}
}
