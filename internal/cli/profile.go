package cli

import (
	"encoding/json"
	"fmt"
	"github.com/rukh-cli/rukh/internal/core/profile"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func newProfileCmd(f *Factory) *cobra.Command {
	cmd := noArgsGroup(&cobra.Command{
		Use:   "profile",
		Short: "Show and change the owner profile: exposure, tasks, namespace",
	})
	cmd.AddCommand(newProfileShowCmd(f), newProfileApplyCmd(f), newProfileHistoryCmd(f))
	return cmd
}

func newProfileShowCmd(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Print the active profile",
		Args:  exactArgs(0, "profile show takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := state(cmd, f)
			if err != nil {
				return err
			}
			if asJSON {
				out := struct {
					Revision uint64          `json:"revision"`
					Hash     string          `json:"hash,omitempty"`
					Profile  json.RawMessage `json:"profile"`
				}{Profile: st.Profile.Canonical()}
				if st.Revision != nil {
					out.Revision, out.Hash = st.Revision.Number, st.Revision.Hash
				}
				return writeJSON(f.IO.Out, out)
			}
			if st.Revision == nil {
				fmt.Fprintln(f.IO.ErrOut, "no revision yet: this is the default profile")
			} else {
				fmt.Fprintf(f.IO.ErrOut, "revision %d (%s)\n", st.Revision.Number, st.Revision.Hash)
			}
			return writeJSON(f.IO.Out, st.Profile)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the profile with its revision as JSON")
	return cmd
}

func newProfileApplyCmd(f *Factory) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Replace the profile with FILE (- for stdin) and print what changed",
		Args:  exactArgs(0, "profile apply takes the file as -f FILE"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return &UsageError{fmt.Errorf("profile apply needs -f FILE")}
			}
			data, err := readInput(f, file)
			if err != nil {
				return err
			}
			h, err := f.Host()
			if err != nil {
				return err
			}
			res, changes, err := h.Admin().ApplyProfile(data)
			if es, ok := err.(profile.Errors); ok {
				// A syntax error is said at FILE:LINE:COLUMN, as by compilers.
				name := file
				if name == "-" {
					name = "stdin"
				}
				return es.In(name)
			}
			if err != nil {
				return err
			}
			for _, c := range changes {
				fmt.Fprintln(f.IO.Out, c)
			}
			printChange(f, res, "profile apply")
			if p, err := profile.Parse(data); err == nil {
				for _, w := range p.Warnings() {
					fmt.Fprintf(f.IO.ErrOut, "warning: %s\n", w)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the profile JSON file, or - for stdin")
	return cmd
}

// readInput reads a bounded input file, or stdin for "-".
func readInput(f *Factory, name string) ([]byte, error) {
	var r io.Reader = f.IO.In
	if name != "-" {
		name = f.Abs(name)
		// Only a regular file: opening a FIFO could block forever.
		if fi, err := os.Stat(name); err != nil {
			return nil, err
		} else if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file", name)
		}
		fh, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer fh.Close()
		r = fh
	}
	const limit = 1 << 20
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if len(data) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, limit)
	}
	return data, nil
}

func newProfileHistoryCmd(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List profile revisions, newest first",
		Args:  exactArgs(0, "profile history takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := f.Host()
			if err != nil {
				return err
			}
			revs, _, err := h.Admin().History()
			if err != nil {
				return err
			}
			type row struct {
				Revision uint64    `json:"revision"`
				Parent   uint64    `json:"parent"`
				Hash     string    `json:"hash"`
				Created  time.Time `json:"created"`
				By       int       `json:"uid"`
				Op       string    `json:"op"`
			}
			rows := []row{}
			for _, r := range revs {
				rows = append(rows, row{r.Number, r.Parent, r.Hash, r.Created, r.By, r.Op})
			}
			if asJSON {
				return writeJSON(f.IO.Out, rows)
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "REVISION\tCREATED\tUID\tOPERATION\tHASH")
			for _, r := range rows {
				fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\n", r.Revision, r.Created.Format(time.RFC3339), r.By, r.Op, shortDigest(r.Hash))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
