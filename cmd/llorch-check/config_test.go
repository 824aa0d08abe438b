package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

func settingsFlags() (*pflag.FlagSet, *int, *string, *time.Duration, *string) {
	fl := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	port := fl.Int("port", 8080, "")
	host := fl.String("host", "127.0.0.1", "")
	timeout := fl.Duration("request-timeout", time.Minute, "")
	cors := fl.String("cors-origins", "", "")
	fl.String("api-key", "", "")
	fl.String("config", "", "")
	return fl, port, host, timeout, cors
}

func writeConfig(t *testing.T, body string) string {
	p := filepath.Join(t.TempDir(), "serve.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

// TestLayerSettings: flags beat the environment, which beats the file,
// which beats the defaults; each value says where it came from.
func TestLayerSettings(t *testing.T) {
	file := writeConfig(t, "port: 9000\nhost: 0.0.0.0\nrequest_timeout: 2m\ncors-origins: [https://a.example, https://b.example]\n")
	fl, port, host, timeout, cors := settingsFlags()
	require.NoError(t, fl.Parse([]string{"--port", "7000"}))
	env := map[string]string{"LLORCH_PORT": "7500", "LLORCH_HOST": "10.0.0.1"}
	source, err := layerSettings(fl, file, func(k string) string { return env[k] }, "config")
	require.NoError(t, err)
	require.Equal(t, 7000, *port)
	require.Equal(t, "10.0.0.1", *host)
	require.Equal(t, 2*time.Minute, *timeout)
	require.Equal(t, "https://a.example,https://b.example", *cors)
	require.Equal(t, map[string]string{"port": fromFlag, "host": fromEnv, "request-timeout": fromFile,
		"cors-origins": fromFile, "api-key": fromDefault, "config": fromDefault}, source)
}

func TestLayerSettingsErrors(t *testing.T) {
	for _, c := range []struct {
		name, file string
		env        map[string]string
		want       string
	}{
		{"unknown key", "port: 1\nmax_queu: 3\n", nil, `serve.yaml:2: unknown setting "max_queu"`},
		{"the config flag itself", "config: other.yaml\n", nil, `unknown setting "config"`},
		{"twice", "port: 1\nport: 2\n", nil, `setting "port" given twice`},
		{"bad value", "port: many\n", nil, "serve.yaml: port:"},
		{"nested", "host: {a: b}\n", nil, "want a value or a list"},
		{"not a mapping", "- port\n", nil, "want a mapping"},
		{"bad environment", "", map[string]string{"LLORCH_REQUEST_TIMEOUT": "soon"}, "$LLORCH_REQUEST_TIMEOUT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fl, _, _, _, _ := settingsFlags()
			require.NoError(t, fl.Parse(nil))
			_, err := layerSettings(fl, writeConfig(t, c.file), func(k string) string { return c.env[k] }, "config")
			require.ErrorContains(t, err, c.want)
		})
	}
	fl, _, _, _, _ := settingsFlags()
	_, err := layerSettings(fl, filepath.Join(t.TempDir(), "missing.yaml"), os.Getenv, "config")
	require.ErrorContains(t, err, "--config")
	_, err = layerSettings(fl, writeConfig(t, ""), os.Getenv, "config")
	require.NoError(t, err, "an empty file sets nothing")
}

func TestPrintSettingsRedacts(t *testing.T) {
	fl, _, _, _, _ := settingsFlags()
	require.NoError(t, fl.Parse([]string{"--api-key", "s3cret", "--port", "9"}))
	source, err := layerSettings(fl, "", func(string) string { return "" }, "config")
	require.NoError(t, err)
	var b strings.Builder
	printSettings(&b, fl, source, "api-key")
	out := b.String()
	require.NotContains(t, out, "s3cret")
	require.Contains(t, out, "<redacted>")
	require.Regexp(t, `port\s+9\s+# flag`, out)
	require.Regexp(t, `host\s+127.0.0.1\s+# default`, out)
}
