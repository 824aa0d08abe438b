package main

import (
	"fmt"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/spf13/cobra"
)

func newListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the twelve checkpoints, what they capture and their tolerances",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t := checkpoints.NewTable(cmd.OutOrStdout())
			t.Header("#", "checkpoint", "captures", "tolerance", "status")
			for _, cp := range checkpoints.All() {
				tol := cp.Tolerance.String()
				if cp.Exact {
					tol = "exact"
				}
				status := "implemented"
				if !cp.Implemented {
					status = "not implemented"
				}
				t.Append(fmt.Sprint(cp.Number), cp.Name, cp.Captures, tol, status)
			}
			return t.Render()
		},
	}
}
