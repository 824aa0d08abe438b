package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHealthcheck(t *testing.T) {
	ready := true
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ready {
			http.Error(w, `{"status":"draining"}`, http.StatusServiceUnavailable)
		}
	}))
	defer ts.Close()
	code, out, _ := runCLI(t, "healthcheck", "--url", ts.URL+"/readyz")
	require.Equal(t, 0, code)
	require.Contains(t, out, "200 OK")
	ready = false
	code, _, errOut := runCLI(t, "healthcheck", "--url", ts.URL+"/readyz")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "503")
	ts.Close()
	code, _, _ = runCLI(t, "healthcheck", "--url", ts.URL+"/readyz")
	require.Equal(t, 1, code, "no answer is unhealthy")
	code, _, errOut = runCLI(t, "healthcheck", "--url", "::bad")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "--url")
}
