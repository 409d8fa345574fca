//go:build !rukh_oneshot

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/rukh-cli/rukh/internal/buildid"
	"github.com/rukh-cli/rukh/internal/daemon/client"
	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/internal/exitcode"
	"github.com/rukh-cli/rukh/internal/mcp"
	"github.com/rukh-cli/rukh/internal/mcp/guard"
	"github.com/rukh-cli/rukh/internal/mcp/seam"
	"github.com/spf13/cobra"
)

func newMCPCmd(f *Factory) *cobra.Command {
	var task, logFile, httpAddr, tlsCert, tlsKey string
	cmd := &cobra.Command{
		Use:   "mcp [--task PRESET] [--http ADDR [--tls-cert FILE --tls-key FILE]]",
		Short: "Serve the exposed commands to an AI agent as MCP tools over stdio (or HTTP)",
		Long: `Serve the commands the owner's profile exposes (mcp.expose) as MCP tools on
stdin/stdout. Every call runs under one task preset, fixed at start: --task,
or the profile's mcp.task. Only MCP frames are written to stdout; logs and
command diagnostics go to stderr or --log-file.

With --http ADDR (e.g. 127.0.0.1:8931), serve Streamable HTTP at /mcp on
ADDR instead, as an OAuth 2.1 resource server: only when the active profile
has an mcp.http section, which names the accepted issuers and binds each
caller to a task. An address that is not loopback needs --tls-cert and
--tls-key. See docs/mcp.md, "Over HTTP".`,
		Args: exactArgs(0, "mcp takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := f.ToolHost()
			if err != nil {
				return err
			}
			if a, ok := h.(*client.Auto); ok {
				// Runs detached in this process end with it, recorded
				// cancelled/interrupted (docs/adr/0005-detached-runs-and-waits.md);
				// those the daemon runs are the daemon's.
				defer a.StopDetached()
			}
			var logw io.Writer = f.IO.ErrOut
			if logFile != "" {
				lf, err := os.OpenFile(f.Abs(logFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
				if err != nil {
					return err
				}
				defer lf.Close()
				logw = lf
			}
			if httpAddr != "" {
				if task != "" {
					return &UsageError{errors.New("--task does not apply to --http: each caller's binding in mcp.http names its task")}
				}
				return stopped(cmd.Context(), serveHTTP(cmd.Context(), f, h, logw, httpAddr, f.Abs(tlsCert), f.Abs(tlsKey), tlsCert != "" || tlsKey != ""))
			}
			binding := mcp.Binding{}
			bound, err := h.BindTask(cmd.Context(), task)
			var we *wire.Error
			switch {
			case errors.As(err, &we) && (we.Code == wire.CodeStoreDamaged || we.Code == wire.CodeStoreUnavailable):
				// Serve anyway: the agent's requests get the error (and
				// the owner's fix), not a server that never answered
				// initialize. The task is bound by the first request
				// that can read the profile.
				fmt.Fprintf(logw, "%s mcp: %v\n", f.Name, err)
				binding.Resolve = func(ctx context.Context) (string, error) { return h.BindTask(ctx, task) }
			case errors.As(err, &we) && we.Code == wire.CodeTaskUndefined:
				return &UsageError{fmt.Errorf("%s; see `%s profile show`", we.Message, f.Name)}
			case err != nil:
				return err
			default:
				binding.Task = bound
				serving(cmd.Context(), f, logw, h, bound)
			}
			logger := slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelWarn}))
			srv := mcp.NewServer(mcp.Options{
				Host:        h,
				Binding:     binding,
				Name:        f.Name,
				Version:     buildid.Version(),
				Logger:      logger,
				Diagnostics: logw,
			})
			// The outer guard checks every message's bytes before the SDK
			// decodes anything and bounds what is written back.
			return stopped(cmd.Context(), srv.Run(cmd.Context(), guard.Stdio(f.IO.In, f.IO.Out, guard.DefaultLimits(), logger)))
		},
	}
	cmd.AddCommand(newMCPConfigCmd(f))
	cmd.Flags().StringVar(&task, "task", "", "the task preset every call runs under (default: the profile's mcp.task)")
	cmd.Flags().StringVar(&logFile, "log-file", "", "write logs and command diagnostics here instead of stderr")
	cmd.Flags().StringVar(&httpAddr, "http", "", "serve Streamable HTTP on this address (host:port) instead of stdio")
	cmd.Flags().StringVar(&tlsCert, "tls-cert", "", "with --http: the TLS certificate chain (PEM)")
	cmd.Flags().StringVar(&tlsKey, "tls-key", "", "with --http: the TLS private key (PEM)")
	return cmd
}

// stopped is err of a server that ran until ctx ended: a signal stopped
// it (the first Ctrl-C or SIGTERM), which its exit status, 130, says;
// there is no error to print.
func stopped(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return &ExitError{Status: exitcode.Interrupted, Err: err, Reported: true}
	}
	return err
}

// warnDenied says on the log which of task's tools it denies every call
// of, and the rule that would admit them.
func warnDenied(logw io.Writer, name, task string, denied []*wire.DeniedTool) {
	for _, d := range deniedRows(denied) {
		fmt.Fprintf(logw, "%s mcp: warning: %s\n", name, d.warning(task))
	}
}

// serving says on the log what `rukh mcp` serves: the home, the task,
// the projection and how many tools and commands, with a warning when
// that is none (an agent's client would show an empty server, silently),
// and one for each tool the task denies every call of.
func serving(ctx context.Context, f *Factory, logw io.Writer, h seam.ToolHost, task string) {
	home := "?"
	if p, err := f.Paths(); err == nil {
		home = p.Data
	}
	page, err := h.ListTools(ctx, &wire.ListTools{Task: task, Denied: true})
	if err != nil {
		fmt.Fprintf(logw, "%s mcp: serving task %q of %s on stdio; listing its tools failed: %v\n", f.Name, task, home, err)
		return
	}
	fmt.Fprintf(logw, "%s mcp: serving task %q of %s on stdio: %d tool%s for %d command%s (projection %s, revision %d)\n",
		f.Name, task, home, page.Total, plural(page.Total), page.Commands, plural(page.Commands), page.Projection, page.Revision)
	warnDenied(logw, f.Name, task, page.Denied)
	if page.Commands == 0 {
		fmt.Fprintf(logw, "%s mcp: warning: task %q sees no command: the profile's mcp.expose names none it may run, or %s is not the home you meant "+
			"(set %s for the client as for your shell); see `%s tools`\n", f.Name, task, home, f.HomeEnv, f.Name)
	}
}
