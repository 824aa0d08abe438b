// Package browser drives the page at / of `llorch-check serve` in headless
// Chromium. Its test is behind the "browser" build tag so that `go test
// ./...` needs no browser; `make test-browser` runs it.
package browser
