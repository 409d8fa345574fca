package cli

import (
	"crypto/rand"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/rukh-cli/rukh/internal/release/trust"
	"github.com/spf13/cobra"
)

func newTrustCmd(f *Factory) *cobra.Command {
	cmd := noArgsGroup(&cobra.Command{
		Use:   "trust",
		Short: "Manage the publishers whose releases may be installed",
	})
	cmd.AddCommand(
		&cobra.Command{
			Use:   "keygen OUT",
			Short: "Create an ed25519 signing key: OUT (private, mode 0600) and OUT.pub",
			Args:  exactArgs(1, "trust keygen takes the output file"),
			RunE: func(cmd *cobra.Command, args []string) error {
				// Never leave half a pair: refuse if either file exists, and
				// take the private key back if the public one cannot be written.
				out := f.Abs(args[0])
				for _, p := range []string{"", ".pub"} {
					if _, err := os.Lstat(out + p); err == nil {
						return fmt.Errorf("%s already exists; choose another name or remove it", args[0]+p)
					}
				}
				k, err := trust.GenerateKey(rand.Reader)
				if err != nil {
					return err
				}
				if err := trust.WritePrivateKey(out, k); err != nil {
					return err
				}
				if err := trust.WritePublicKey(out+".pub", k.Public()); err != nil {
					os.Remove(out)
					return err
				}
				fmt.Fprintf(f.IO.Out, "private key: %s\npublic key:  %s.pub\nkey id:      %s\n", args[0], args[0], k.Public().ID())
				return nil
			},
		},
		&cobra.Command{
			Use:   "add PUBLISHER PUBKEYFILE",
			Short: "Trust a publisher's public key",
			Args:  exactArgs(2, "trust add takes a publisher and a public key file"),
			RunE: func(cmd *cobra.Command, args []string) error {
				h, err := f.Host()
				if err != nil {
					return err
				}
				res, id, err := h.Admin().TrustAdd(args[0], f.Abs(args[1]))
				if err != nil {
					return err
				}
				printChange(f, res, fmt.Sprintf("trusting %s key %s", args[0], id))
				return nil
			},
		},
		newTrustListCmd(f),
		&cobra.Command{
			Use:   "remove PUBLISHER",
			Short: "Stop trusting every key of a publisher",
			Args:  exactArgs(1, "trust remove takes a publisher"),
			RunE: func(cmd *cobra.Command, args []string) error {
				h, err := f.Host()
				if err != nil {
					return err
				}
				res, err := h.Admin().TrustRemove(args[0])
				if err != nil {
					return err
				}
				printChange(f, res, "no longer trusting "+args[0])
				return nil
			},
		},
	)
	return cmd
}

type keyJSON struct {
	Publisher string    `json:"publisher"`
	Key       string    `json:"key"`
	AddedAt   time.Time `json:"addedAt"`
	AddedBy   int       `json:"addedBy"`
}

func newTrustListCmd(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List trusted publisher keys",
		Args:  exactArgs(0, "trust list takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := f.Host()
			if err != nil {
				return err
			}
			keys, err := h.Admin().TrustedKeys()
			if err != nil {
				return err
			}
			out := []keyJSON{}
			for _, k := range keys {
				out = append(out, keyJSON{k.Publisher, k.ID, k.AddedAt, k.AddedBy})
			}
			if asJSON {
				return writeJSON(f.IO.Out, out)
			}
			if len(out) == 0 {
				fmt.Fprintf(f.IO.ErrOut, "no trusted publishers; add one with `%s trust add PUBLISHER KEY.pub`\n", f.Name)
				return nil
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PUBLISHER\tKEY\tADDED")
			for _, k := range out {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", k.Publisher, k.Key, k.AddedAt.Format(time.RFC3339))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
