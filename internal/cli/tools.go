//go:build !rukh_oneshot

package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/rukh-cli/rukh/internal/core/profile"
	"github.com/rukh-cli/rukh/internal/core/projection"
	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/internal/mcp"
	"github.com/spf13/cobra"
)

// maxClientName is the tool-name length many MCP clients accept
// (docs/projection.md).
const maxClientName = 64

func newToolsCmd(f *Factory) *cobra.Command {
	var asJSON bool
	var task string
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "Show the MCP tools agents see, and eligible commands that are not exposed",
		Args:  exactArgs(0, "tools takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := state(cmd, f)
			if err != nil {
				return err
			}
			p := st.Projection
			type toolRow struct {
				Name     string `json:"name"`
				Identity string `json:"identity"`
				Title    string `json:"title"`
			}
			type hidden struct {
				Identity string `json:"identity"`
				Reason   string `json:"reason"`
			}
			out := struct {
				Revision    uint64    `json:"revision"`
				Namespace   string    `json:"endpointNamespace"`
				Naming      string    `json:"naming"`
				CatalogHash string    `json:"catalogHash"`
				Tools       []toolRow `json:"tools"`
				NotExposed  []hidden  `json:"notExposed"`
				// What the bound task's agents are sent (tools/list):
				// each tool's JSON as listed, and the total.
				Task            string           `json:"task"`
				Projection      string           `json:"projection"`
				Advertised      []advertisedTool `json:"advertised"`
				AdvertisedBytes int              `json:"advertisedBytes"`
				// The tools of the task every call of which is denied.
				Denied []deniedTool `json:"denied"`
			}{Revision: p.Revision, Namespace: p.Namespace, Naming: string(p.Naming), CatalogHash: p.CatalogHash,
				Tools: []toolRow{}, NotExposed: []hidden{}, Projection: st.Profile.MCPProjection(), Advertised: []advertisedTool{}}
			list, err := advertised(cmd, f, task)
			if err != nil {
				return err
			}
			out.Task, out.Advertised, out.Denied = list.Task, list.Tools, deniedRows(list.Denied)
			for _, a := range out.Advertised {
				out.AdvertisedBytes += a.Bytes
			}
			// The names clients are sent are the ones they may reject.
			names := make([]string, len(out.Advertised))
			for i, a := range out.Advertised {
				names[i] = a.Name
			}
			for _, t := range p.Tools {
				out.Tools = append(out.Tools, toolRow{t.Name, t.Identity, t.Title})
			}
			for _, n := range p.NotExposed {
				out.NotExposed = append(out.NotExposed, hidden{n.Identity, n.Reason})
			}
			if asJSON {
				return writeJSON(f.IO.Out, out)
			}
			fmt.Fprintf(f.IO.Out, "revision %d, namespace %s, %s names, catalog %s\n\n", out.Revision, out.Namespace, out.Naming, out.CatalogHash)
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			if out.Projection == profile.ProjectionDispatch {
				// No agent is sent these names: the commands are the
				// dispatch tool's ops.
				fmt.Fprintln(tw, "OP\tTITLE\t")
				for _, t := range out.Tools {
					fmt.Fprintf(tw, "%s\t%s\t\n", t.Identity, t.Title)
				}
			} else {
				fmt.Fprintln(tw, "NAME\tIDENTITY\tTITLE")
				for _, t := range out.Tools {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name, t.Identity, t.Title)
				}
			}
			if len(out.Tools) == 0 {
				fmt.Fprintln(tw, "(none exposed)\t\t")
			}
			tw.Flush()
			fmt.Fprintf(f.IO.Out, "\nAdvertised to task %q (projection %s): %d tool%s, %d bytes\n", out.Task, out.Projection,
				len(out.Advertised), plural(len(out.Advertised)), out.AdvertisedBytes)
			tw = tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			for _, a := range out.Advertised {
				fmt.Fprintf(tw, "  %s\t%d bytes\n", a.Name, a.Bytes)
			}
			tw.Flush()
			if len(out.NotExposed) > 0 {
				fmt.Fprintln(f.IO.Out, "\nEligible but not exposed:")
				tw = tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
				for _, n := range out.NotExposed {
					fmt.Fprintf(tw, "  %s\t%s\n", n.Identity, n.Reason)
				}
				tw.Flush()
			}
			fmt.Fprint(f.IO.ErrOut, longNames(names, nameLimit{Max: maxClientName, Who: "many MCP clients reject them"}, p.Naming))
			for _, d := range out.Denied {
				fmt.Fprintf(f.IO.ErrOut, "warning: %s\n", d.warning(out.Task))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&task, "task", "", "count what this task's agents are sent (default: the profile's mcp.task)")
	return cmd
}

// nameLimit is the longest tool name a client accepts, counted as it
// counts them.
type nameLimit struct {
	Max int
	// Prefix is what the client puts before each name, and With says
	// so (" with Claude Code's prefix mcp__rukh__"); both "" for none.
	Prefix, With string
	Who          string // what they do with longer names: "Cursor rejects them"
}

// longNames is the warning, "" for none, about the names longer than l
// allows, and what to change: the profile's naming, or, when names are
// already compact, the server's name in the client. `tools` (for any
// client) and `mcp config` (for that client) both warn with it.
func longNames(names []string, l nameLimit, naming projection.Naming) string {
	n := 0
	for _, name := range names {
		if len(l.Prefix)+len(name) > l.Max {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	fix := `Set "mcp": {"naming": "compact"} in the profile (docs/projection.md)`
	if naming == projection.Compact {
		fix = "Give the server a shorter name in the client (--name)"
	}
	return fmt.Sprintf("warning: %d tool name%s longer than %d characters%s; %s. %s\n", n, plural(n), l.Max, l.With, l.Who, fix)
}

// deniedTool is a tool a task's agents are listed, every call of which
// the task denies: its command asks for an access no allow rule grants
// (wire.DeniedTool, as the host lists it).
type deniedTool struct {
	Name     string `json:"name"`
	Identity string `json:"identity"`
	Action   string `json:"action"`
	Resource string `json:"resource"`
}

func deniedRows(list []*wire.DeniedTool) []deniedTool {
	out := []deniedTool{}
	for _, d := range list {
		out = append(out, deniedTool{d.Name, d.Identity, d.Action, d.Resource})
	}
	return out
}

// warning says that task denies every call of d, and the rule to add.
func (d deniedTool) warning(task string) string {
	rule, _ := json.Marshal(profile.Rule{Action: d.Action, Resource: suggestedResource(d.Resource)})
	return fmt.Sprintf("task %q denies every call of %s: it needs %s on %q, which no rule of tasks.%s.allow grants; add one to the profile, e.g. %s, as narrow as you mean it",
		task, d.Identity, d.Action, d.Resource, task, rule)
}

// suggestedResource is an allow pattern that covers the resource template
// r: each {input} a "*", and a path from its first placeholder on "**"
// ("*" stops at a "/").
func suggestedResource(r string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(r, '{')
		j := strings.IndexByte(r, '}')
		if i < 0 || j < i {
			b.WriteString(r)
			break
		}
		b.WriteString(r[:i] + "*")
		r = r[j+1:]
	}
	out := b.String()
	if p, ok := strings.CutPrefix(out, "path:"); ok {
		if i := strings.IndexByte(p, '*'); i >= 0 {
			out = "path:" + p[:i] + "**"
		}
	}
	return out
}

// advertisedTool is one tool as an agent of the bound task lists it.
type advertisedTool struct {
	Name  string `json:"name"`
	Bytes int    `json:"bytes"`
}

// toolList is what a task's agents are listed, as the host that serves
// them (rukhd, when one answers) lists it.
type toolList struct {
	Task   string
	Tools  []advertisedTool
	Denied []*wire.DeniedTool // the tools the task denies every call of
	Naming projection.Naming
}

// advertised lists every tool task's agents see, as `rukh mcp --task`
// would, and measures each as tools/list sends it; and the tools the task
// denies every call of, as `rukh mcp` says at start.
func advertised(cmd *cobra.Command, f *Factory, task string) (*toolList, error) {
	th, err := f.ToolHost()
	if err != nil {
		return nil, err
	}
	task, err = th.BindTask(cmd.Context(), task)
	var we *wire.Error
	if errors.As(err, &we) && we.Code == wire.CodeTaskUndefined {
		return nil, &UsageError{fmt.Errorf("%s; see `%s profile show`", we.Message, f.Name)}
	}
	if err != nil {
		return nil, err
	}
	out := &toolList{Task: task, Tools: []advertisedTool{}}
	cursor := ""
	for {
		page, err := th.ListTools(cmd.Context(), &wire.ListTools{Task: task, Cursor: cursor, Denied: cursor == ""})
		if err != nil {
			return nil, err
		}
		if cursor == "" {
			out.Denied, out.Naming = page.Denied, projection.Naming(page.Naming)
		}
		for _, t := range page.Tools {
			out.Tools = append(out.Tools, advertisedTool{t.Name, mcp.AdvertisedBytes(t)})
		}
		if cursor = page.NextCursor; cursor == "" {
			return out, nil
		}
	}
}
