package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

// newHealthcheckCmd is the container image's HEALTHCHECK: the image has no
// shell and no curl, so the binary asks its own server.
func newHealthcheckCmd() *cobra.Command {
	var url string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "healthcheck [--url URL]",
		Short: "Exit 0 if a running serve answers 200 on its readiness URL, else 1",
		Long: `healthcheck GETs URL (default the readiness probe of a local serve) and
exits 0 on 200, 1 on anything else or no answer: the HEALTHCHECK of the
container image, which has no shell or curl.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return fmt.Errorf("--url %q: %w", url, err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %v\n", url, err)
				return errFailed
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n", url, resp.Status)
				return errFailed
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", url, resp.Status)
			return nil
		},
	}
	cmd.Flags().StringVar(&url, "url", "http://127.0.0.1:8080/readyz", "readiness URL to ask")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "give up after this long")
	return cmd
}
