package httpapi

import (
	"embed"
	"net/http"
)

// The web page at / (DESIGN.md section 8): static files embedded in the binary, served with a strict
// Content-Security-Policy (scripts and styles from this origin only, no inline code, no framing).
//
//go:embed web/index.html web/app.js web/app.css
var webFS embed.FS

const webCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func serveWeb(mux *http.ServeMux) {
	for pattern, f := range map[string][2]string{
		"GET /{$}":     {"web/index.html", "text/html; charset=utf-8"},
		"GET /app.js":  {"web/app.js", "text/javascript; charset=utf-8"},
		"GET /app.css": {"web/app.css", "text/css; charset=utf-8"},
	} {
		body, err := webFS.ReadFile(f[0])
		if err != nil {
			panic(err) // embedded at build time: cannot happen
		}
		contentType := f[1]
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Set("Content-Type", contentType)
			h.Set("Content-Security-Policy", webCSP)
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Referrer-Policy", "no-referrer")
			h.Set("X-Frame-Options", "DENY")
			h.Set("Cache-Control", "no-cache")
			_, _ = w.Write(body)
		})
	}
}
