package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// maxClientName is the tool-name length many MCP clients accept
// (docs/projection.md).
const maxClientName = 64

func newToolsCmd(f *Factory) *cobra.Command {
	var asJSON bool
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
			}{Revision: p.Revision, Namespace: p.Namespace, Naming: string(p.Naming), CatalogHash: p.CatalogHash,
				Tools: []toolRow{}, NotExposed: []hidden{}}
			long := 0
			for _, t := range p.Tools {
				out.Tools = append(out.Tools, toolRow{t.Name, t.Identity, t.Title})
				if len(t.Name) > maxClientName {
					long++
				}
			}
			for _, n := range p.NotExposed {
				out.NotExposed = append(out.NotExposed, hidden{n.Identity, n.Reason})
			}
			if asJSON {
				return writeJSON(f.IO.Out, out)
			}
			fmt.Fprintf(f.IO.Out, "revision %d, namespace %s, %s names, catalog %s\n\n", out.Revision, out.Namespace, out.Naming, out.CatalogHash)
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tIDENTITY\tTITLE")
			for _, t := range out.Tools {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name, t.Identity, t.Title)
			}
			if len(out.Tools) == 0 {
				fmt.Fprintln(tw, "(none exposed)\t\t")
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
			if long > 0 {
				fmt.Fprintf(f.IO.ErrOut, "warning: %d tool name%s longer than %d characters; many MCP clients reject them. Set \"mcp\": {\"naming\": \"compact\"} in the profile (docs/projection.md)\n",
					long, plural(long), maxClientName)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
