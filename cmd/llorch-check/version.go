package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/llorch/llorch-check/kernels"
)

// linkVersion is set for release builds (-ldflags "-X main.linkVersion=v1.2.3");
// linkCommit for builds without the repository's VCS data (a container
// build context without .git).
var linkVersion, linkCommit string

// version is linkVersion, else the module version the Go toolchain
// stamped (go install module@version), else "dev".
func version() string {
	if linkVersion != "" {
		return linkVersion
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// versionString is --version: which build this is and which matrix kernels
// this CPU gets, since two reports are only comparable with that known.
func versionString() string {
	commit := "unknown (built without VCS information, e.g. by go run)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if rev != "" {
			commit = rev[:min(12, len(rev))]
			if modified == "true" {
				commit += " (modified)"
			}
		}
	}
	if linkCommit != "" {
		commit = linkCommit
	}
	return fmt.Sprintf("llorch-check %s\ncommit:  %s\ngo:      %s %s/%s\nkernels: %s\n",
		version(), commit, runtime.Version(), runtime.GOOS, runtime.GOARCH, kernels.Name())
}
