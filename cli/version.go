package cli

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/rukh-cli/rukh/descriptor"
	"github.com/rukh-cli/rukh/internal/buildid"
	"github.com/rukh-cli/rukh/paths"
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
				Version:           BuildVersion(),
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
			fmt.Fprintf(f.IO.Out, "%s %s (%s)\nbuild: %s\ndescriptor formats: %s\nmachine features: %s\n",
				v.Name, v.Version, v.Go, v.Build, strings.Join(v.DescriptorFormats, ", "), strings.Join(v.Features, ", "))
			if v.Paths != nil {
				fmt.Fprintf(f.IO.Out, "data: %s\nconfig: %s\nruntime: %s\n", v.Paths.Data, v.Paths.Config, v.Paths.Runtime)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
