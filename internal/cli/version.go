package cli

import (
	"runtime"

	"github.com/rukh-cli/rukh/internal/buildid"
	"github.com/rukh-cli/rukh/internal/paths"
	"github.com/rukh-cli/rukh/internal/release/descriptor"
	"github.com/rukh-cli/rukh/thin"
	"github.com/spf13/cobra"
)

type versionInfo struct {
	Name              string       `json:"name"`
	Version           string       `json:"version"`
	Build             string       `json:"build"`
	Go                string       `json:"go"`
	DescriptorFormats []string     `json:"descriptorFormats"`
	Features          []string     `json:"features"`
	Paths             *paths.Paths `json:"paths,omitempty"`
}

func newVersionCmd(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version and the formats this build supports",
		Args:  exactArgs(0, "version takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := versionInfo{
				Name:              f.Name,
				Version:           buildid.Version(),
				Build:             buildid.ID(),
				Go:                runtime.Version(),
				DescriptorFormats: []string{descriptor.FormatV1, descriptor.FormatV2},
				Features:          descriptor.KnownFeatures,
			}
			// Where files live is useful here, but not worth failing for.
			if p, err := f.Paths(); err == nil {
				v.Paths = &p
			}
			if asJSON {
				return writeJSON(f.IO.Out, v)
			}
			// The thin client prints the same with the same function.
			thin.WriteVersion(f.IO.Out, f.Name, v.Paths)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
