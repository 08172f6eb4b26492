package httpapi

import (
	"bytes"
	"embed"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// The web page at / (DESIGN.md section 8): static files embedded in the binary, served with a strict
// Content-Security-Policy (scripts and styles from this origin only, no inline code, no framing, no
// remote images, fetches to this origin only), so that even markup slipped past the page's text-only
// rendering could neither run nor send anything elsewhere. The script is a set of ES modules (app.js
// imports the others by relative path), each served at /<name>.js; the browser loads them as they are.
//
//go:embed web/index.html web/*.js web/app.css
var webFS embed.FS

const webCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// webFile is one served file.
type webFile struct {
	pattern, contentType string
	body                 []byte
}

func webFiles() []webFile {
	files := []webFile{{pattern: "GET /favicon.ico", contentType: "image/x-icon", body: favicon()}}
	served := map[string][2]string{
		"GET /{$}":     {"web/index.html", "text/html; charset=utf-8"},
		"GET /app.css": {"web/app.css", "text/css; charset=utf-8"},
	}
	modules, err := fs.Glob(webFS, "web/*.js")
	if err != nil {
		panic(err) // a constant, valid pattern
	}
	for _, m := range modules {
		// text/javascript: browsers refuse a module script served with any other (non-JavaScript) type
		served["GET /"+path.Base(m)] = [2]string{m, "text/javascript; charset=utf-8"}
	}
	for pattern, f := range served {
		body, err := webFS.ReadFile(f[0])
		if err != nil {
			panic(err) // embedded at build time: cannot happen
		}
		files = append(files, webFile{pattern: pattern, contentType: f[1], body: body})
	}
	return files
}

// webCSPFor is the page's policy with uploadOrigin (presigned uploads' storage) added to connect-src, so
// that the page may PUT a file there. Anything but a bare http(s) origin (a path, a wildcard, a quote or
// a ';' that would start another directive) is not added: the policy stays the strict one.
func webCSPFor(uploadOrigin string) string {
	u, err := url.Parse(uploadOrigin)
	if uploadOrigin == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" ||
		u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" ||
		strings.ContainsAny(uploadOrigin, " ;,'\"*") {
		return webCSP
	}
	return strings.Replace(webCSP, "connect-src 'self';", "connect-src 'self' "+u.Scheme+"://"+u.Host+";", 1)
}

func serveWeb(mux *http.ServeMux, uploadOrigin string) {
	csp := webCSPFor(uploadOrigin)
	for _, f := range webFiles() {
		mux.HandleFunc(f.pattern, func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Set("Content-Type", f.contentType)
			h.Set("Content-Security-Policy", csp)
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Referrer-Policy", "no-referrer")
			h.Set("X-Frame-Options", "DENY")
			h.Set("Cache-Control", "no-cache")
			_, _ = w.Write(f.body)
		})
	}
}

// favicon draws the 32x32 icon (a white "d" on the header's dark blue, rounded corners) and wraps its
// PNG in an ICO container, which every browser accepts at /favicon.ico.
func favicon() []byte {
	const n = 32
	img := image.NewNRGBA(image.Rect(0, 0, n, n))
	bg := color.NRGBA{0x1f, 0x4f, 0xb8, 0xff}
	fg := color.NRGBA{0xff, 0xff, 0xff, 0xff}
	inRing := func(x, y, cx, cy, r0, r1 int) bool {
		d := (x-cx)*(x-cx) + (y-cy)*(y-cy)
		return d >= r0*r0 && d <= r1*r1
	}
	for y := range n {
		for x := range n {
			// rounded square: skip the corners outside a radius-6 arc
			cx, cy := min(max(x, 6), n-7), min(max(y, 6), n-7)
			if (x-cx)*(x-cx)+(y-cy)*(y-cy) > 36 {
				continue
			}
			c := bg
			if inRing(x, y, 14, 19, 5, 8) || (x >= 20 && x <= 23 && y >= 6 && y <= 27) {
				c = fg // the bowl and the stem of the "d"
			}
			img.SetNRGBA(x, y, c)
		}
	}
	var p bytes.Buffer
	if err := png.Encode(&p, img); err != nil {
		panic(err) // encoding an in-memory image cannot fail
	}
	var ico bytes.Buffer
	// ICONDIR (reserved, type 1 = icon, 1 image), then one ICONDIRENTRY pointing at the PNG after them.
	_ = binary.Write(&ico, binary.LittleEndian, []uint16{0, 1, 1})
	ico.Write([]byte{n, n, 0, 0})
	_ = binary.Write(&ico, binary.LittleEndian, []uint16{1, 32})
	_ = binary.Write(&ico, binary.LittleEndian, []uint32{uint32(p.Len()), 6 + 16})
	ico.Write(p.Bytes())
	return ico.Bytes()
}
