package server

import (
	"bytes"
	"embed"
	"fmt"
	"net/http"
	"regexp"
)

// static holds the page's sources: the markup and style in index.html,
// each view's script in a file of its own so each reads in one sitting.
//
//go:embed static
var static embed.FS

// indexHTML is the page as served: one response with its scripts inlined,
// so the page needs no route besides / and its Content-Security-Policy
// allows no script from anywhere.
var indexHTML = inlineScripts(static, "static/index.html")

// scriptTag is how index.html names a script of static: <script
// src="chat.js"></script>, a name without a directory.
var scriptTag = regexp.MustCompile(`<script src="([a-z]+\.js)"></script>`)

// inlineScripts returns the file at path with each script tag naming a
// file beside it replaced by an inline script of that file's text. The
// files are embedded: one missing is a broken build, hence the panic.
func inlineScripts(fsys embed.FS, path string) []byte {
	page, err := fsys.ReadFile(path)
	if err != nil {
		panic(fmt.Sprintf("the page: %v", err))
	}
	return scriptTag.ReplaceAllFunc(page, func(tag []byte) []byte {
		name := scriptTag.FindSubmatch(tag)[1]
		src, err := fsys.ReadFile("static/" + string(name))
		if err != nil {
			panic(fmt.Sprintf("the page's script %s: %v", name, err))
		}
		if bytes.Contains(src, []byte("</script")) {
			panic(fmt.Sprintf("the page's script %s holds </script, which would end its inline tag", name))
		}
		return append(append([]byte("<script>\n"), src...), "</script>"...)
	})
}

// handlePage serves the try-it-by-hand page: plain HTML and JavaScript,
// embedded so the binary is the whole deployment.
func (s *Server) handlePage(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
	_, _ = w.Write(indexHTML)
}
