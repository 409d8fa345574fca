//go:build !rukh_oneshot

package cli

import "github.com/spf13/cobra"

// addBuiltins adds the built-in commands to root and reports that it
// did. Each is named by a descriptor.ReservedWords word
// (TestAdministrativeFence). The one-shot core binary links none of them
// (builtins_oneshot.go).
func addBuiltins(f *Factory, root *cobra.Command) bool {
	root.AddCommand(newVersionCmd(f), newExtCmd(f), newTrustCmd(f), newProfileCmd(f), newToolsCmd(f), newInvocationsCmd(f), newMCPCmd(f),
		noArgsGroup(newDaemonCmd(f)), newDoctorCmd(f), newApproveCmd(f))
	return true
}
