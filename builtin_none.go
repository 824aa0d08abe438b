//go:build nobuiltin

package llorchcheck

import "embed"

// builtin is empty in a build tagged nobuiltin: the container image
// carries the default model and its references as files beside a binary
// 37 MB smaller (Dockerfile), and its read-only root file system could
// not take the copy the built-in files are read through.
var builtin embed.FS

// carried says whether builtin holds the files.
const carried = false
